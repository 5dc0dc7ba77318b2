import test from 'ava';
import { ADMIN_TOKEN, INGEST_TOKEN, signLicence, startApp } from '../helpers/app.ts';

test('POST /v1/login answers 401 for a wrong token and {bootstrap: true} for the admin token on a new install', async (t) => {
  const ta = await startApp(t);
  const wrong = await ta.call('POST', '/v1/login', { token: null, body: { token: 'not-the-token' } });
  t.is(wrong.status, 401);
  t.deepEqual(wrong.body, { error: 'unauthorized' });
  const right = await ta.call('POST', '/v1/login', { token: null, body: { token: ADMIN_TOKEN } });
  t.is(right.status, 200);
  t.deepEqual(right.body, { bootstrap: true });
  t.is((await ta.call('POST', '/v1/login', { token: null, body: {} })).status, 400);
});

test('bootstrap before a licence answers 409 no_licence and creates nobody', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('POST', '/v1/auth/bootstrap', { body: { email: 'owner@bank.example', name: 'Owner' } });
  t.is(res.status, 409);
  t.is(res.body.error, 'no_licence');
  t.is(Number((await ta.app.db('people').count({ n: '*' }).first())?.n), 0);
});

test('bootstrap creates the first owner once, moves the install to operating, and records both', async (t) => {
  const ta = await startApp(t);
  await ta.call('POST', '/v1/licence', { body: { licence: signLicence() } });
  const res = await ta.call('POST', '/v1/auth/bootstrap', { body: { email: 'Owner@Bank.Example', name: 'Olu Owner' } });
  t.is(res.status, 201);
  t.deepEqual(res.body, { user: { email: 'owner@bank.example', name: 'Olu Owner', role: 'owner' } });
  const status = (await ta.call('GET', '/v1/status')).body;
  t.is(status.mode, 'operating');
  t.is(status.setup.done, 2);
  t.is(status.setup.next, null);
  const events = (await ta.call('GET', '/v1/ledger?order=asc&after_seq=2')).body.events;
  t.deepEqual(
    events.map((e: { type: string }) => e.type),
    ['identity.owner_created', 'system.mode_changed'],
  );
  t.is(events[0].actor, 'admin-token');
  const again = await ta.call('POST', '/v1/auth/bootstrap', { body: { email: 'second@bank.example', name: 'Second' } });
  t.is(again.status, 409);
  t.is(again.body.error, 'already_bootstrapped');
  // No mail provider was given, so no code can be sent: the admin token opens break-glass
  // (test/identity/sign-in.test.ts covers it and its closing).
  const login = await ta.call('POST', '/v1/login', { token: null, body: { token: ADMIN_TOKEN } });
  t.is(login.status, 200);
  t.true(login.body.break_glass);
});

test('concurrent bootstraps create exactly one owner', async (t) => {
  const ta = await startApp(t);
  await ta.call('POST', '/v1/licence', { body: { licence: signLicence() } });
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) => ta.call('POST', '/v1/auth/bootstrap', { body: { email: `o${i}@bank.example`, name: `O${i}` } })),
  );
  t.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409]);
  t.is(Number((await ta.app.db('people').count({ n: '*' }).first())?.n), 1);
  t.true((await ta.app.verifyLedger()).ok);
});

test('bootstrap needs the admin token itself', async (t) => {
  const ta = await startApp(t);
  await ta.call('POST', '/v1/licence', { body: { licence: signLicence() } });
  for (const token of [null, INGEST_TOKEN, 'wrong']) {
    t.is((await ta.call('POST', '/v1/auth/bootstrap', { token, body: { email: 'o@bank.example', name: 'O' } })).status, 401);
  }
});

test('bootstrap refuses a bad e-mail, a blank name or unknown fields with 400 and writes nothing', async (t) => {
  const ta = await startApp(t);
  await ta.call('POST', '/v1/licence', { body: { licence: signLicence() } });
  const head = (await ta.app.ledger.head()).seq;
  for (const body of [
    { email: 'not-an-email', name: 'O' },
    { email: 'o@bank.example', name: '   ' },
    { email: 'o@bank.example' },
    { email: 'o@bank.example', name: 'O', role: 'viewer' },
  ]) {
    const res = await ta.call('POST', '/v1/auth/bootstrap', { body });
    t.is(res.status, 400, JSON.stringify(body));
    t.is(res.body.error, 'invalid_body');
  }
  t.is((await ta.app.ledger.head()).seq, head);
  t.is(Number((await ta.app.db('people').count({ n: '*' }).first())?.n), 0);
});

test('a mail API key given at bootstrap is stored sealed and never reaches the ledger or an answer', async (t) => {
  const ta = await startApp(t);
  await ta.call('POST', '/v1/licence', { body: { licence: signLicence() } });
  const key = 're_live_secret_key_value_123456';
  const res = await ta.call('POST', '/v1/auth/bootstrap', { body: { email: 'o@bank.example', name: 'O', resend_key: key, mail_from: 'oncall@bank.example' } });
  t.is(res.status, 201);
  t.false(JSON.stringify(res.body).includes(key));
  const row = await ta.app.db('settings').where({ name: 'mail' }).first();
  t.false(row.value.includes(key));
  t.is(JSON.parse(row.value).mail_from, 'oncall@bank.example');
  const ledger = await ta.call('GET', '/v1/ledger?limit=2000');
  t.false(JSON.stringify(ledger.body).includes(key));
  t.true(ta.logs.every((l) => !l.includes(key)));
});
