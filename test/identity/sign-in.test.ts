import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import test from 'ava';
import { DAY, HOUR, MINUTE } from '../../host/clock.ts';
import { SCRYPT, SCRYPT_CHANNEL } from '../../host/identity/password.ts';
import { ADMIN_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';

const OWNER = 'owner@bank.example';

interface Ctx {
  ta: TestApp;
  smtp: TestSmtp;
}

/** An operating install whose mail goes to a real SMTP server (STARTTLS, self-signed CA trusted). */
async function withMail(t: Parameters<typeof startApp>[0], env: Record<string, string> = {}): Promise<Ctx> {
  const smtp = await startSmtp(t);
  const ta = await startApp(t, { env: { SERVICE_MAIL_CA_FILE: smtp.caFile, ...env } });
  await makeOperating(ta, OWNER);
  const put = await ta.call('PUT', '/v1/settings/mail', {
    body: { smtp_host: smtp.host, smtp_port: smtp.port, smtp_security: 'starttls', mail_from: 'oncall@bank.example' },
  });
  if (put.status !== 200) throw new Error(`mail settings: ${JSON.stringify(put.body)}`);
  return { ta, smtp };
}

const request = (ta: TestApp, email: string, headers: Record<string, string> = {}) =>
  fetch(`${ta.base}/v1/auth/request`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ email }) });

/** Asks for a code and reads it from the message the SMTP server received. */
async function codeFor({ ta, smtp }: Ctx, email: string): Promise<string> {
  const before = smtp.messages.length;
  const res = await request(ta, email);
  if (res.status !== 202) throw new Error(`request: ${res.status} ${await res.text()}`);
  await ta.app.signIn.idle();
  const mail = smtp.messages
    .slice(before)
    .reverse()
    .find((m) => m.to.includes(email));
  if (mail === undefined) throw new Error(`no code arrived for ${email}`);
  return /\b(\d{6})\b/.exec(mail.text)![1]!;
}

const verify = (ta: TestApp, email: string, code: string) => ta.call('POST', '/v1/auth/verify', { token: null, body: { email, code } });

async function signIn(c: Ctx, email: string): Promise<string> {
  const res = await verify(c.ta, email, await codeFor(c, email));
  if (res.status !== 200) throw new Error(`verify: ${JSON.stringify(res.body)}`);
  return res.body.token as string;
}

const me = (ta: TestApp, token: string) => ta.call('GET', '/v1/auth/me', { token });
const types = async (ta: TestApp, prefix: string) =>
  ((await ta.call('GET', `/v1/ledger?type=${prefix}&order=asc&limit=2000`)).body.events as { type: string }[]).map((e) => e.type);

test('an owner signs in with an e-mailed code, is who /v1/auth/me says, and signs out', async (t) => {
  const c = await withMail(t);
  const res = await request(c.ta, OWNER);
  t.is(res.status, 202);
  t.deepEqual(await res.json(), { sent: true });
  await c.ta.app.signIn.idle();
  t.is(c.smtp.messages.length, 1);
  const code = /\b(\d{6})\b/.exec(c.smtp.messages[0]!.text)![1]!;
  const v = await verify(c.ta, OWNER, code);
  t.is(v.status, 200);
  t.like(v.body.user, { email: OWNER, role: 'owner' });
  t.regex(v.body.token, /^[A-Za-z0-9_-]{43}$/, '256 bits');
  const who = await me(c.ta, v.body.token);
  t.is(who.status, 200);
  t.like(who.body, { actor: OWNER, role: 'owner', via: 'session', user: { email: OWNER } });
  t.is((await verify(c.ta, OWNER, code)).status, 401, 'a code works once');
  t.is((await c.ta.call('POST', '/v1/auth/logout', { token: v.body.token })).status, 200);
  const after = await me(c.ta, v.body.token);
  t.is(after.status, 401);
  t.regex(after.body.message, /signed out/);
  t.deepEqual(await types(c.ta, 'identity.code'), ['identity.code_sent', 'identity.code_wrong']);
  t.deepEqual(await types(c.ta, 'identity.signed_in'), ['identity.signed_in']);
  const stored = await c.ta.app.db('sessions').select('token_hash');
  t.false(JSON.stringify(stored).includes(v.body.token), 'only the hash is stored');
  t.true((await c.ta.app.verifyLedger()).ok);
});

test('known and unknown addresses get byte-identical answers; nothing is sent to the unknown one', async (t) => {
  const c = await withMail(t);
  const answer = async (email: string) => {
    const res = await request(c.ta, email);
    const headers = [...res.headers.entries()]
      .filter(([k]) => k !== 'date')
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n');
    return `${res.status}\n${headers}\n\n${await res.text()}`;
  };
  const known = await answer(OWNER);
  const unknown = await answer('nobody@bank.example');
  const refused = await answer('someone@mailinator.com');
  t.is(unknown, known);
  t.is(refused, known);
  await c.ta.app.signIn.idle();
  t.deepEqual(
    c.smtp.messages.map((m) => m.to),
    [[OWNER]],
  );
  t.deepEqual((await types(c.ta, 'identity.code')).sort(), ['identity.code_ignored', 'identity.code_ignored', 'identity.code_sent']);
  t.is((await verify(c.ta, 'nobody@bank.example', '123456')).body.error, 'invalid_code');
});

test('a code request answers before anything about the address is looked at: a mail server that never answers does not delay it', async (t) => {
  // A server that accepts connections and never greets: a send through it hangs until
  // nodemailer's greeting timeout. If the service sent before answering, the answer would wait.
  const sockets = new Set<Socket>();
  let connected!: () => void;
  const firstConnection = new Promise<void>((resolve) => (connected = resolve));
  const silent = createNetServer((s) => {
    sockets.add(s);
    connected();
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const ta = await startApp(t);
  await makeOperating(ta, OWNER);
  t.is(
    (
      await ta.call('PUT', '/v1/settings/mail', {
        body: { smtp_host: '127.0.0.1', smtp_port: (silent.address() as AddressInfo).port, smtp_security: 'none', mail_from: 'oncall@bank.example' },
      })
    ).status,
    200,
  );
  t.teardown(() => new Promise<void>((resolve) => silent.close(() => resolve())));
  t.is((await request(ta, OWNER)).status, 202);
  t.is((await request(ta, 'nobody@bank.example')).status, 202);
  // Both answered while the known address's send still hangs: it can end only by our closing the
  // socket below or by the 15 s greeting timeout, and either writes identity.code_failed. Had the
  // service sent before answering, that event would be in the ledger before the answer.
  t.deepEqual(await types(ta, 'identity.code_failed'), [], 'the answer did not wait for the send');
  // The send runs after the answer, so it may not have connected yet: wait for it, or for the
  // send to end without ever connecting (then the test fails here rather than hanging).
  const sent = await Promise.race([firstConnection.then(() => true), ta.app.signIn.idle().then(() => false)]);
  t.true(sent, 'the send to the known address starts after the answer');
  t.is(sockets.size, 1, 'only the known address gets a send');
  for (const s of sockets) s.destroy();
  await ta.app.signIn.idle();
  t.deepEqual((await types(ta, 'identity.code')).sort(), ['identity.code_failed', 'identity.code_ignored']);
});

// Serial: it counts the scrypt derivations of the whole process, so no other test may sign in meanwhile.
test.serial('a password for an unknown address costs the same as a real one: it is checked against a decoy hash', async (t) => {
  const c = await withMail(t);
  // The known address has a password (an owner has none: its check would be the decoy's too).
  const owner = await signIn(c, OWNER);
  await c.ta.call('POST', '/v1/people', { token: owner, body: { email: 'ada@bank.example', name: 'Ada', role: 'admin' } });
  t.is((await c.ta.call('POST', '/v1/people/ada@bank.example/password', { token: owner, body: {} })).status, 201);
  const runs: unknown[] = [];
  const listen = (m: unknown): void => void runs.push(m);
  SCRYPT_CHANNEL.subscribe(listen);
  t.teardown(() => SCRYPT_CHANNEL.unsubscribe(listen));
  const pw = async (email: string) => {
    runs.length = 0;
    const res = await c.ta.call('POST', '/v1/auth/password', { token: null, body: { email, password: 'not-the-password-0000' } });
    return { status: res.status, body: res.body, runs: [...runs] };
  };
  await pw('warmup@bank.example'); // makes the decoy hash once (a derivation of its own)
  const known = await pw('ada@bank.example');
  const unknown = await pw('x1@bank.example');
  t.is(known.status, 401);
  // The same answer, and exactly the same work: one scrypt derivation with the service's parameters.
  // (The time this costs, and how close the two paths are on the clock, is in `npm run bench:auth`.)
  const one = [{ N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p, keyLength: SCRYPT.keyLength }];
  t.deepEqual(known.runs, one);
  t.deepEqual(unknown.runs, one);
  t.is(unknown.status, known.status);
  t.deepEqual(unknown.body, known.body);
});

test('a code: the 5th try still counts, the 6th is refused; it lasts 10 minutes', async (t) => {
  const c = await withMail(t);
  let code = await codeFor(c, OWNER);
  const wrong = code === '000000' ? '111111' : '000000';
  for (let i = 0; i < 4; i++) t.is((await verify(c.ta, OWNER, wrong)).status, 401);
  t.is((await verify(c.ta, OWNER, code)).status, 200, 'the 5th try counts');

  code = await codeFor(c, OWNER);
  for (let i = 0; i < 5; i++) t.is((await verify(c.ta, OWNER, wrong)).body.error, 'invalid_code');
  t.is((await verify(c.ta, OWNER, code)).status, 401, 'the 6th is refused even when right');

  code = await codeFor(c, OWNER);
  c.ta.clock.advance(10 * MINUTE);
  t.is((await verify(c.ta, OWNER, code)).status, 401, 'expired after 10 minutes');
  t.true((await types(c.ta, 'identity.code_wrong')).length >= 11);
});

test('at most 3 codes per address per 10 minutes, counted the same for unknown addresses; then it works again', async (t) => {
  const c = await withMail(t);
  for (const email of [OWNER, 'nobody@bank.example']) {
    for (let i = 0; i < 3; i++) t.is((await request(c.ta, email)).status, 202, `${email} #${i + 1}`);
    const fourth = await request(c.ta, email);
    t.is(fourth.status, 429, email);
    t.is(((await fourth.json()) as { error: string }).error, 'rate_limited');
    t.is(fourth.headers.get('retry-after'), '600');
  }
  await c.ta.app.signIn.idle();
  t.is(c.smtp.messages.length, 3);
  c.ta.clock.advance(10 * MINUTE);
  t.is((await request(c.ta, OWNER)).status, 202, 'after 10 minutes it works again');
  // Refusals from one client are recorded at most once a minute, with a count (the rest by the tick).
  await c.ta.app.tick();
  const limited = (await c.ta.call('GET', '/v1/ledger?type=identity.code_rate_limited&order=asc')).body.events;
  t.is(limited.length, 2);
  t.deepEqual(
    limited.map((e: { data: { rate_limited: number } }) => e.data.rate_limited),
    [1, 1],
  );
});

test('at most 20 code requests per client address per 10 minutes; X-Forwarded-For is believed only from a trusted proxy', async (t) => {
  const c = await withMail(t);
  for (let i = 0; i < 20; i++) t.is((await request(c.ta, `p${i}@bank.example`, { 'x-forwarded-for': `10.0.0.${i}` })).status, 202);
  t.is((await request(c.ta, 'p21@bank.example', { 'x-forwarded-for': '10.9.9.9' })).status, 429, 'the header from an untrusted peer changes nothing');

  const proxied = await withMail(t, { SERVICE_TRUSTED_PROXIES: '127.0.0.1,::1' });
  for (let i = 0; i < 20; i++) t.is((await request(proxied.ta, `p${i}@bank.example`, { 'x-forwarded-for': '203.0.113.7' })).status, 202);
  t.is((await request(proxied.ta, 'q@bank.example', { 'x-forwarded-for': '203.0.113.7' })).status, 429);
  t.is((await request(proxied.ta, 'q@bank.example', { 'x-forwarded-for': '203.0.113.8' })).status, 202, 'another client behind the proxy');
});

test('concurrent verifies of one code open at most one session', async (t) => {
  const c = await withMail(t);
  const code = await codeFor(c, OWNER);
  const results = await Promise.all(Array.from({ length: 8 }, () => verify(c.ta, OWNER, code)));
  t.deepEqual(results.map((r) => r.status).sort(), [200, 401, 401, 401, 401, 401, 401, 401]);
  t.is(Number((await c.ta.app.db('sessions').count({ n: '*' }).first())?.n), 1);
});

test('a session ends after 12 hours idle, and after 7 days however active', async (t) => {
  const c = await withMail(t);
  const token = await signIn(c, OWNER);
  c.ta.clock.advance(12 * HOUR - MINUTE);
  t.is((await me(c.ta, token)).status, 200);
  c.ta.clock.advance(12 * HOUR);
  const idle = await me(c.ta, token);
  t.is(idle.status, 401);
  t.regex(idle.body.message, /12 hours/);

  const busy = await signIn(c, OWNER);
  for (let h = 6; h < 7 * 24; h += 6) {
    c.ta.clock.advance(6 * HOUR);
    const res = await me(c.ta, busy);
    t.is(res.status, 200, `${h} h: ${JSON.stringify(res.body)}`);
  }
  c.ta.clock.advance(6 * HOUR);
  const old = await me(c.ta, busy);
  t.is(old.status, 401);
  t.regex(old.body.message, /7 days/);
});

test('people: viewers read, admins manage non-owners, only an owner touches owners, the last owner stays', async (t) => {
  const c = await withMail(t);
  const owner = await signIn(c, OWNER);
  const add = (token: string, body: unknown) => c.ta.call('POST', '/v1/people', { token, body });
  t.is((await add(owner, { email: 'Ada@Bank.Example', name: 'Ada Admin', role: 'admin' })).status, 201);
  t.is((await add(owner, { email: 'vic@bank.example', name: 'Vic Viewer', role: 'viewer', teams: ['payments'] })).status, 201);
  t.is((await add(owner, { email: 'vic@bank.example', name: 'Again', role: 'viewer' })).body.error, 'person_exists');
  t.is((await add(owner, { email: 'eve@elsewhere.example', name: 'Eve', role: 'viewer' })).body.error, 'not_allowed_by_policy');
  t.is((await add(owner, { email: 'x@bank.example', name: 'X', role: 'root' })).status, 400);
  const admin = await signIn(c, 'ada@bank.example');
  const viewer = await signIn(c, 'vic@bank.example');

  t.is((await c.ta.call('GET', '/v1/people', { token: viewer })).status, 200);
  t.is((await add(viewer, { email: 'v2@bank.example', name: 'V2', role: 'viewer' })).status, 403);
  t.is((await add(admin, { email: 'o2@bank.example', name: 'O2', role: 'owner' })).status, 403, 'only an owner adds an owner');
  t.is((await add(admin, { email: 'v2@bank.example', name: 'V2', role: 'viewer' })).status, 201);
  t.is((await c.ta.call('PATCH', `/v1/people/${OWNER}`, { token: admin, body: { name: 'Renamed' } })).status, 403, 'an admin does not change an owner');

  const demote = await c.ta.call('PATCH', `/v1/people/${OWNER}`, { token: owner, body: { role: 'admin' } });
  t.is(demote.status, 409);
  t.is(demote.body.error, 'last_owner');
  t.is((await c.ta.call('PATCH', `/v1/people/${OWNER}`, { token: owner, body: { enabled: false } })).body.error, 'last_owner');

  // A role change ends that person's sessions at once, under the signed-in person's name.
  const promote = await c.ta.call('PATCH', '/v1/people/vic@bank.example', { token: admin, body: { role: 'admin', by: 'someone-else' } });
  t.is(promote.status, 400, 'no by field: the actor is the session');
  t.is((await c.ta.call('PATCH', '/v1/people/vic@bank.example', { token: admin, body: { role: 'admin' } })).status, 200);
  const ended = await me(c.ta, viewer);
  t.is(ended.status, 401);
  t.regex(ended.body.message, /role changed/);
  const changed = (await c.ta.call('GET', '/v1/ledger?type=identity.person_changed')).body.events[0];
  t.like(changed, { actor: 'ada@bank.example', data: { email: 'vic@bank.example', changes: { role: { from: 'viewer', to: 'admin' } }, sessions_ended: 1 } });

  // Disabling ends sessions too, and the person can no longer get a code.
  const again = await signIn(c, 'ada@bank.example');
  t.is((await c.ta.call('PATCH', '/v1/people/ada@bank.example', { token: owner, body: { enabled: false } })).status, 200);
  t.is((await me(c.ta, again)).status, 401);
  await request(c.ta, 'ada@bank.example');
  await c.ta.app.signIn.idle();
  t.true((await types(c.ta, 'identity.code_refused')).length >= 1);

  // With two owners, one may step down.
  t.is((await add(owner, { email: 'otto@bank.example', name: 'Otto', role: 'owner' })).status, 201);
  t.is((await c.ta.call('PATCH', `/v1/people/${OWNER}`, { token: owner, body: { role: 'admin' } })).status, 200);
  t.is((await c.ta.call('GET', '/v1/people', { token: null })).status, 401);
  t.true((await c.ta.app.verifyLedger()).ok);
});

test('tightening the access policy ends the sessions of people it no longer admits, at once', async (t) => {
  const c = await withMail(t);
  const owner = await signIn(c, OWNER);
  t.is(
    (
      await c.ta.call('PUT', '/v1/settings/access', {
        token: owner,
        body: { allowed_domains: ['bank.example', 'partner.example'], blocked: [], block_webmail: false },
      })
    ).status,
    200,
  );
  t.is((await c.ta.call('POST', '/v1/people', { token: owner, body: { email: 'pat@partner.example', name: 'Pat', role: 'viewer' } })).status, 201);
  const partner = await signIn(c, 'pat@partner.example');
  t.is((await me(c.ta, partner)).status, 200);
  const put = await c.ta.call('PUT', '/v1/settings/access', { token: owner, body: { allowed_domains: ['bank.example'], blocked: [], block_webmail: false } });
  t.is(put.status, 200);
  const res = await me(c.ta, partner);
  t.is(res.status, 401);
  t.regex(res.body.message, /access policy/);
  t.like((await c.ta.call('GET', '/v1/ledger?type=identity.access_changed')).body.events[0], { actor: OWNER, data: { sessions_ended: 1 } });
});

test('a password for one person: shown once, hashed, five wrong tries lock the address 15 minutes, and it ends its sessions', async (t) => {
  const c = await withMail(t);
  const owner = await signIn(c, OWNER);
  await c.ta.call('POST', '/v1/people', { token: owner, body: { email: 'ada@bank.example', name: 'Ada', role: 'admin' } });
  t.is((await c.ta.call('POST', `/v1/people/${OWNER}/password`, { token: owner, body: {} })).body.error, 'password_not_allowed', 'not for owners');
  const admin = await signIn(c, 'ada@bank.example');
  t.is((await c.ta.call('POST', '/v1/people/ada@bank.example/password', { token: admin, body: {} })).status, 403, 'only an owner gives one');

  const given = await c.ta.call('POST', '/v1/people/ada@bank.example/password', { token: owner, body: { expires: '7d' } });
  t.is(given.status, 201);
  const { password, expires_at } = given.body;
  t.true(password.length >= 16);
  t.is(expires_at, new Date(c.ta.clock.now().getTime() + 7 * DAY).toISOString());
  const row = await c.ta.app.db('people').where({ email: 'ada@bank.example' }).first();
  t.regex(row.password_hash, /^scrypt\$32768\$8\$3\$/);
  t.false(JSON.stringify((await c.ta.call('GET', '/v1/people', { token: owner })).body).includes(row.password_hash));

  const login = (pw: string) => c.ta.call('POST', '/v1/auth/password', { token: null, body: { email: 'ada@bank.example', password: pw } });
  const ok = await login(password);
  t.is(ok.status, 200);
  t.like(ok.body.user, { email: 'ada@bank.example', role: 'admin' });

  for (let i = 0; i < 5; i++) t.is((await login('wrong-password-000000')).body.error, 'invalid_credentials');
  const locked = await login(password);
  t.is(locked.status, 401, 'locked: the right password is refused the same way');
  t.deepEqual(locked.body, (await login('wrong-password-000000')).body);
  c.ta.clock.advance(15 * MINUTE);
  t.is((await login(password)).status, 200, 'unlocked after 15 minutes');

  // The session opened with the password ends when the password does.
  const session = (await login(password)).body.token;
  c.ta.clock.advance(7 * DAY - 15 * MINUTE);
  const gone = await me(c.ta, session);
  t.is(gone.status, 401);
  t.regex(gone.body.message, /password/);
  t.is((await login(password)).status, 401, 'an ended password opens nothing');

  // Removing it ends its sessions at once.
  const fresh = (await c.ta.call('POST', '/v1/people/ada@bank.example/password', { token: await signIn(c, OWNER), body: { expires: 'none' } })).body;
  t.is(fresh.expires_at, null);
  const s2 = (await login(fresh.password)).body.token;
  t.is((await c.ta.call('DELETE', '/v1/people/ada@bank.example/password', { token: await signIn(c, OWNER) })).status, 200);
  t.is((await me(c.ta, s2)).status, 401);
  t.deepEqual(
    (await types(c.ta, 'identity.password_')).filter((x) => x !== 'identity.password_wrong'),
    ['identity.password_set', 'identity.password_set', 'identity.password_removed'],
  );
});

test('30 password tries from one client in 10 minutes are refused with 429', async (t) => {
  const c = await withMail(t);
  for (let i = 0; i < 30; i++)
    t.is((await c.ta.call('POST', '/v1/auth/password', { token: null, body: { email: `u${i}@bank.example`, password: 'x' } })).status, 401);
  const res = await c.ta.call('POST', '/v1/auth/password', { token: null, body: { email: 'u@bank.example', password: 'x' } });
  t.is(res.status, 429);
  t.truthy(res.headers.get('retry-after'));
});

test('break-glass: while no code can be sent the admin token opens a session, recorded each time; once a code is sent it closes', async (t) => {
  const smtp = await startSmtp(t);
  const ta = await startApp(t, { env: { SERVICE_MAIL_CA_FILE: smtp.caFile } });
  await makeOperating(ta, OWNER);
  const login = () => ta.call('POST', '/v1/login', { token: null, body: { token: ADMIN_TOKEN } });
  t.like((await ta.call('GET', '/v1/status', { token: null })).body.auth.break_glass, { open: true });
  const glass = await login();
  t.is(glass.status, 200);
  t.true(glass.body.break_glass);
  t.like((await me(ta, glass.body.token)).body, { actor: 'admin-token', role: 'owner', via: 'break_glass', user: null });
  const ev = (await ta.call('GET', '/v1/ledger?type=identity.break_glass')).body.events;
  t.is(ev.length, 1);
  t.truthy(ev[0].reason);
  t.is(ev[0].actor, 'admin-token');

  // The break-glass session configures mail; a code is sent; break-glass closes.
  t.is(
    (
      await ta.call('PUT', '/v1/settings/mail', {
        token: glass.body.token,
        body: { smtp_host: smtp.host, smtp_port: smtp.port, smtp_security: 'starttls', mail_from: 'oncall@bank.example' },
      })
    ).status,
    200,
  );
  await codeFor({ ta, smtp }, OWNER);
  t.like((await ta.call('GET', '/v1/status', { token: null })).body.auth.break_glass, { open: false });
  t.is((await me(ta, glass.body.token)).status, 401, 'the code sent closed break-glass and ended its session');
  const refused = await login();
  t.is(refused.status, 403);
  t.deepEqual(refused.body.error, 'use_email');
  t.is((await ta.call('GET', '/v1/ledger?type=identity.token_sign_in_refused')).body.events.length, 1);
  t.is((await ta.call('POST', '/v1/login', { token: null, body: { token: 'wrong' } })).status, 401);

  // The mail server starts refusing: the next code cannot be sent, and break-glass opens again.
  smtp.refuse('rcpt');
  await request(ta, OWNER);
  await ta.app.signIn.idle();
  t.is((await types(ta, 'identity.code_failed')).length, 1);
  t.is((await login()).status, 200);
  t.is((await me(ta, glass.body.token)).status, 401, 'a session ended when break-glass closed stays ended when it opens again');
});

test('no code, password or token ever reaches the logs or the ledger', async (t) => {
  const c = await withMail(t);
  const owner = await signIn(c, OWNER);
  await c.ta.call('POST', '/v1/people', { token: owner, body: { email: 'ada@bank.example', name: 'Ada', role: 'admin' } });
  const { password } = (await c.ta.call('POST', '/v1/people/ada@bank.example/password', { token: owner, body: {} })).body;
  const pwSession = (await c.ta.call('POST', '/v1/auth/password', { token: null, body: { email: 'ada@bank.example', password } })).body.token;
  const code = await codeFor(c, OWNER);
  const codeSession = (await verify(c.ta, OWNER, code)).body.token;
  await verify(c.ta, OWNER, '999999');
  const ledger = JSON.stringify((await c.ta.call('GET', '/v1/ledger?limit=2000')).body);
  const logs = c.ta.logs.join('');
  for (const secret of [owner, password, pwSession, code, codeSession, ADMIN_TOKEN]) {
    t.false(ledger.includes(secret), 'ledger');
    t.false(logs.includes(secret), 'logs');
  }
  t.false(JSON.stringify(await c.ta.app.db('sign_in_codes').select('*')).includes(`"${code}"`), 'codes are kept as an HMAC');
});

test('settings by role: a viewer reads mail and access settings but changes neither; a test e-mail goes to the signed-in person', async (t) => {
  const c = await withMail(t);
  const owner = await signIn(c, OWNER);
  await c.ta.call('POST', '/v1/people', { token: owner, body: { email: 'vic@bank.example', name: 'Vic', role: 'viewer' } });
  await c.ta.call('POST', '/v1/people', { token: owner, body: { email: 'ada@bank.example', name: 'Ada', role: 'admin' } });
  const viewer = await signIn(c, 'vic@bank.example');
  const admin = await signIn(c, 'ada@bank.example');
  t.is((await c.ta.call('GET', '/v1/settings/mail', { token: viewer })).status, 200);
  t.is((await c.ta.call('PUT', '/v1/settings/mail', { token: viewer, body: { smtp_port: 2525 } })).status, 403);
  t.is((await c.ta.call('POST', '/v1/settings/mail/test', { token: viewer })).status, 403);
  t.is((await c.ta.call('GET', '/v1/settings/access', { token: viewer })).status, 200);
  t.is(
    (await c.ta.call('PUT', '/v1/settings/access', { token: viewer, body: { allowed_domains: ['bank.example'], blocked: [], block_webmail: true } })).status,
    403,
  );
  t.is(
    (await c.ta.call('PUT', '/v1/settings/access', { token: admin, body: { allowed_domains: ['bank.example'], blocked: [], block_webmail: true } })).status,
    200,
  );
  const before = c.smtp.messages.length;
  const sent = await c.ta.call('POST', '/v1/settings/mail/test', { token: admin });
  t.is(sent.status, 200);
  t.deepEqual((await c.smtp.message(before)).to, ['ada@bank.example']);
  t.like((await c.ta.call('GET', '/v1/ledger?type=config.mail_tested')).body.events[0], { actor: 'ada@bank.example' });
  t.is((await c.ta.call('POST', '/v1/licence', { token: admin, body: { licence: {} } })).status, 403, 'licences are for owners');
});
