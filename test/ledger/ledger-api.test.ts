import test from 'ava';
import { INGEST_TOKEN, startApp, type TestApp } from '../helpers/app.ts';

async function seed(ta: TestApp, n: number): Promise<void> {
  await Promise.all(
    Array.from({ length: n }, (_, i) =>
      ta.app.ledger.append({ type: i % 2 ? 'human.deploy' : 'check.ran', actor: i % 3 ? 'ops@bank.example' : 'robot', reason: `step ${i}`, data: { n: i } }),
    ),
  );
}

test('POST /v1/events records a caller event and answers 201 with its seq and hash', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('POST', '/v1/events', {
    token: INGEST_TOKEN,
    body: { type: 'human.deploy', actor: 'release-pipeline', reason: 'v2 rolled out', data: { service: 'payments' } },
  });
  t.is(res.status, 201);
  t.is(res.body.seq, 1);
  t.regex(res.body.hash, /^[0-9a-f]{64}$/);
  const listed = await ta.call('GET', '/v1/ledger');
  t.like(listed.body.events[0], {
    seq: 1,
    type: 'human.deploy',
    actor: 'release-pipeline',
    reason: 'v2 rolled out',
    data: { service: 'payments' },
    hash: res.body.hash,
  });
});

test('every one of the twelve caller prefixes is accepted and any other type is refused with 400', async (t) => {
  const ta = await startApp(t);
  for (const p of ['signal', 'retrieval', 'model', 'check', 'decision', 'approval', 'action', 'outcome', 'config', 'connector', 'system', 'human']) {
    t.is((await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: { type: `${p}.x`, actor: 'a' } })).status, 201, p);
  }
  for (const type of ['identity.signed_in', 'study.started', 'human', 'Human.x', 'humanx.y', '']) {
    const res = await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: { type, actor: 'a' } });
    t.is(res.status, 400, type);
    t.true(['invalid_event_type', 'invalid_body'].includes(res.body.error), type);
  }
  t.is((await ta.call('GET', '/v1/ledger')).body.events.length, 12, 'nothing refused was written');
});

test('POST /v1/events refuses bad bodies with a clear code and writes nothing', async (t) => {
  const ta = await startApp(t);
  const bad: Array<[unknown, string]> = [
    ['{not json', 'invalid_json'],
    [{ type: 'human.x' }, 'invalid_body'],
    [{ type: 'human.x', actor: 7 }, 'invalid_body'],
    [{ type: 'human.x', actor: 'a', data: [] }, 'invalid_body'],
    [{ type: 'human.x', actor: 'a', data: 'text' }, 'invalid_body'],
    [{ type: 'human.x', actor: 'a', extra: 1 }, 'invalid_body'],
    [[1, 2], 'invalid_body'],
    ['"a string"', 'invalid_body'],
  ];
  for (const [body, code] of bad) {
    const res = await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body });
    t.is(res.status, 400, JSON.stringify(body));
    t.is(res.body.error, code, JSON.stringify(body));
  }
  t.is((await ta.app.ledger.head()).seq, 0);
  t.true((await ta.app.verifyLedger()).ok);
});

test('POST /v1/events answers 403 ingest_disabled when no ingest token is configured, whatever token is sent', async (t) => {
  const ta = await startApp(t, { env: { SERVICE_INGEST_TOKEN: undefined } });
  for (const token of [null, 'anything', INGEST_TOKEN]) {
    const res = await ta.call('POST', '/v1/events', { token, body: { type: 'human.x', actor: 'a' } });
    t.is(res.status, 403);
    t.deepEqual(res.body, { error: 'ingest_disabled' });
  }
});

test('the ingest token opens only ingest endpoints and the admin token does not open them', async (t) => {
  const ta = await startApp(t);
  t.is((await ta.call('GET', '/v1/ledger', { token: INGEST_TOKEN })).status, 401);
  t.is((await ta.call('GET', '/v1/ledger/verify', { token: INGEST_TOKEN })).status, 401);
  t.is((await ta.call('POST', '/v1/events', { body: { type: 'human.x', actor: 'a' } })).status, 401);
});

test('GET /v1/ledger answers newest first by default and oldest first with order=asc', async (t) => {
  const ta = await startApp(t);
  await seed(ta, 5);
  t.deepEqual(
    (await ta.call('GET', '/v1/ledger')).body.events.map((e: { seq: number }) => e.seq),
    [5, 4, 3, 2, 1],
  );
  t.deepEqual(
    (await ta.call('GET', '/v1/ledger?order=asc')).body.events.map((e: { seq: number }) => e.seq),
    [1, 2, 3, 4, 5],
  );
  t.is((await ta.call('GET', '/v1/ledger')).body.more, false);
});

test('paging with before_seq walks the whole log newest first with no gaps and no repeats', async (t) => {
  const ta = await startApp(t);
  await seed(ta, 250);
  const seen: number[] = [];
  let before: number | undefined;
  for (let pages = 0; pages < 10; pages++) {
    const res = await ta.call('GET', `/v1/ledger?limit=100${before === undefined ? '' : `&before_seq=${before}`}`);
    seen.push(...res.body.events.map((e: { seq: number }) => e.seq));
    if (!res.body.more) break;
    before = seen[seen.length - 1];
  }
  t.deepEqual(
    seen,
    Array.from({ length: 250 }, (_, i) => 250 - i),
  );
});

test('paging with after_seq and order=asc walks the whole log oldest first with no gaps and no repeats', async (t) => {
  const ta = await startApp(t);
  await seed(ta, 250);
  const seen: number[] = [];
  let after = 0;
  for (let pages = 0; pages < 10; pages++) {
    const res = await ta.call('GET', `/v1/ledger?order=asc&limit=70&after_seq=${after}`);
    seen.push(...res.body.events.map((e: { seq: number }) => e.seq));
    if (!res.body.more) break;
    after = seen[seen.length - 1]!;
  }
  t.deepEqual(
    seen,
    Array.from({ length: 250 }, (_, i) => i + 1),
  );
});

test('the filters type and actor match prefixes, trace matches exactly, q finds text in reason or data', async (t) => {
  const ta = await startApp(t);
  await ta.app.ledger.append({ type: 'human.deploy', actor: 'ops@bank.example', reason: 'rolled payments', data: { service: 'payments' }, trace: 'ep-1' });
  await ta.app.ledger.append({ type: 'human.action', actor: 'ops2@bank.example', reason: 'restarted', data: { service: 'ledger-db' }, trace: 'ep-2' });
  await ta.app.ledger.append({ type: 'check.ran', actor: 'robot', reason: '100% done_ok', data: { service: 'payments' } });
  const seqs = async (qs: string) => (await ta.call('GET', `/v1/ledger?${qs}`)).body.events.map((e: { seq: number }) => e.seq);
  t.deepEqual(await seqs('type=human.'), [2, 1]);
  t.deepEqual(await seqs('type=human.deploy'), [1]);
  t.deepEqual(await seqs('actor=ops'), [2, 1]);
  t.deepEqual(await seqs('trace=ep-2'), [2]);
  t.deepEqual(await seqs('trace=ep'), []);
  t.deepEqual(await seqs('q=payments'), [3, 1]);
  t.deepEqual(await seqs('q=restart'), [2]);
  t.deepEqual(await seqs('q=100%25'), [3], 'a % in q is literal');
  t.deepEqual(await seqs('q=o_e'), [], 'an _ in q is literal');
  t.deepEqual(await seqs('type=human.&actor=ops2'), [2]);
});

test('limit defaults to 100 and anything above 2000 is clamped to 2000', async (t) => {
  const ta = await startApp(t);
  await seed(ta, 2100);
  const def = await ta.call('GET', '/v1/ledger');
  t.is(def.body.events.length, 100);
  t.true(def.body.more);
  const big = await ta.call('GET', '/v1/ledger?limit=5000');
  t.is(big.status, 200);
  t.is(big.body.events.length, 2000);
  t.true(big.body.more);
});

test('GET /v1/ledger refuses malformed parameters with 400 and a message naming the parameter', async (t) => {
  const ta = await startApp(t);
  for (const qs of ['limit=abc', 'limit=-1', 'limit=0', 'limit=1.5', 'before_seq=x', 'after_seq=-3', 'after_seq=2.5', 'order=sideways']) {
    const res = await ta.call('GET', `/v1/ledger?${qs}`);
    t.is(res.status, 400, qs);
    t.is(res.body.error, 'invalid_parameter', qs);
    t.true(res.body.message.includes(qs.split('=')[0]!), qs);
  }
});

test('GET /v1/ledger and verify need a bearer token', async (t) => {
  const ta = await startApp(t);
  for (const path of ['/v1/ledger', '/v1/ledger/verify']) {
    t.deepEqual((await ta.call('GET', path, { token: null })).body, { error: 'unauthorized' });
    t.is((await ta.call('GET', path, { token: 'wrong' })).status, 401);
  }
});
