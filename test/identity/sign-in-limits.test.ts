import test from 'ava';
import { MINUTE } from '../../host/clock.ts';
import type { AppError } from '../../host/errors.ts';
import { AdminLoginService } from '../../host/identity/admin-login.service.ts';
import { AttemptsRepo } from '../../host/identity/attempts.repo.ts';
import { LimitLocksRepo } from '../../host/identity/limit-locks.repo.ts';
import { RateLimits } from '../../host/identity/rate-limits.ts';
import { Refusals } from '../../host/identity/refusals.ts';
import { SessionService } from '../../host/identity/session.service.ts';
import { SessionsRepo } from '../../host/identity/sessions.repo.ts';
import { ADMIN_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { lockRuleBroken } from '../helpers/lock-rule.ts';
import { breakGlass } from '../helpers/people.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';
import { UnitOfWork } from '../../host/storage/unit-of-work.ts';

/**
 * The sign-in limits under concurrent requests, in one host process, on the engine of the pass
 * (SQLite, or MariaDB with TEST_DATABASE_URL). test/identity/sign-in-processes.test.ts repeats the
 * counting ones with two host processes on one MariaDB database.
 */
const OWNER = 'owner@bank.example';
const PERSON = 'ada@bank.example';

interface Ctx {
  ta: TestApp;
  smtp: TestSmtp;
}

/** An operating install, trusting 127.0.0.1 as a proxy so each test names its own client, with mail to a real SMTP server. */
async function withMail(t: Parameters<typeof startApp>[0]): Promise<Ctx> {
  const smtp = await startSmtp(t);
  const ta = await startApp(t, { env: { SERVICE_MAIL_CA_FILE: smtp.caFile, SERVICE_TRUSTED_PROXIES: '127.0.0.1,::1' } });
  await makeOperating(ta, OWNER);
  const put = await ta.call('PUT', '/v1/settings/mail', {
    body: { smtp_host: smtp.host, smtp_port: smtp.port, smtp_security: 'starttls', mail_from: 'oncall@bank.example' },
  });
  if (put.status !== 200) throw new Error(`mail settings: ${JSON.stringify(put.body)}`);
  return { ta, smtp };
}

const post = (ta: TestApp, path: string, body: unknown, client: string) =>
  fetch(ta.base + path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': client }, body: JSON.stringify(body) });

const statuses = (xs: Response[]): Record<number, number> =>
  xs.reduce<Record<number, number>>((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {});

async function events(ta: TestApp, type: string): Promise<Array<{ type: string; actor: string; reason: string; data: any }>> {
  return (await ta.call('GET', `/v1/ledger?type=${type}&order=asc&limit=2000`)).body.events;
}

/** Gives PERSON (a viewer) a password and answers it. */
async function personWithPassword(ta: TestApp): Promise<string> {
  t_ok(await ta.call('POST', '/v1/people', { body: { email: PERSON, name: 'Ada', role: 'viewer' } }), 201);
  const given = await ta.call('POST', `/v1/people/${PERSON}/password`, { body: { expires: '30d' } });
  t_ok(given, 201);
  return given.body.password as string;
}

function t_ok(res: { status: number; body: unknown }, status: number): void {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
}

// Serial: the hash queue is one per process, and another test's burst (45 passwords at once)
// filling it would refuse some of these tries with 503 before they reach the address.
test.serial('nineteen wrong passwords and the right one at once: five count, then the address is locked, and no session opens once it is', async (t) => {
  const { ta } = await withMail(t);
  const password = await personWithPassword(ta);
  const client = '203.0.113.10';
  // From ten clients, two each: one client's tries beyond eight waiting for a hash are refused
  // with 503 before they reach the address (docs/sign-in.md, the hash queue).
  const wrong = Array.from({ length: 19 }, (_, i) =>
    post(ta, '/v1/auth/password', { email: PERSON, password: `wrong-password-${i}-0000` }, `203.0.113.${100 + (i % 10)}`),
  );
  const right = post(ta, '/v1/auth/password', { email: PERSON, password }, '203.0.113.109');
  const answers = await Promise.all([...wrong, right]);
  t.true(
    answers.every((r) => r.status === 401 || r.status === 200),
    JSON.stringify(statuses(answers)),
  );
  const evs = (await events(ta, 'identity.')).filter(
    (e) => (e.type === 'identity.password_wrong' || e.type === 'identity.signed_in') && e.data.email === PERSON,
  );
  t.is(evs.length, 20, 'each try is one event');
  t.is(lockRuleBroken(evs), null);
  t.is(evs.filter((e) => e.type === 'identity.password_wrong' && e.data.locks === true).length, 1, 'one try sets the lock');
  t.log(`the right password answered ${(await right).status}`);
  t.is((await post(ta, '/v1/auth/password', { email: PERSON, password }, client)).status, 401, 'the address is locked now: the right password fails');
  ta.clock.advance(15 * MINUTE);
  t.is((await post(ta, '/v1/auth/password', { email: PERSON, password }, client)).status, 200, 'after 15 minutes it works');
});

test('40 code requests at once from one client: exactly 20 are accepted', async (t) => {
  const { ta } = await withMail(t);
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => post(ta, '/v1/auth/request', { email: `p${i}@bank.example` }, '203.0.113.20')));
  t.deepEqual(statuses(answers), { 202: 20, 429: 20 });
  const limited = answers.find((r) => r.status === 429)!;
  t.is(limited.headers.get('retry-after'), '600');
  const rows = async (kind: string) => Number((await ta.app.db('auth_limits').where({ kind }).count({ n: '*' }).first())?.n);
  t.is(await rows('code_address'), 20, 'a request the client limit refuses leaves no row for its address');
  await ta.app.signIn.idle();
  // The refusals are recorded at most once a minute per client, with a count.
  const first = await events(ta, 'identity.code_rate_limited');
  t.is(first.length, 1);
  t.like(first[0], { actor: 'anonymous', data: { client: '203.0.113.20', rate_limited: 1 } });
  await ta.app.tick();
  t.is((await events(ta, 'identity.code_rate_limited')).length, 1);
  ta.clock.advance(MINUTE);
  await ta.app.tick();
  t.deepEqual(
    (await events(ta, 'identity.code_rate_limited')).map((e) => e.data.rate_limited),
    [1, 19],
  );
});

test('code checks: 30 per client per 10 minutes, then 429, so failures cannot be sent without end', async (t) => {
  const { ta } = await withMail(t);
  const answers = await Promise.all(
    Array.from({ length: 35 }, (_, i) => post(ta, '/v1/auth/verify', { email: `v${i}@bank.example`, code: '123456' }, '203.0.113.25')),
  );
  t.deepEqual(statuses(answers), { 401: 30, 429: 5 });
  t.is((await events(ta, 'identity.code_wrong')).length, 30);
  t.is((await post(ta, '/v1/auth/verify', { email: 'v@bank.example', code: '123456' }, '203.0.113.26')).status, 401, 'another client is not limited');
  ta.clock.advance(10 * MINUTE);
  t.is((await post(ta, '/v1/auth/verify', { email: 'v@bank.example', code: '123456' }, '203.0.113.25')).status, 401, 'after 10 minutes it checks again');
});

test('10 code requests at once for one address: exactly 3 codes are sent', async (t) => {
  const { ta, smtp } = await withMail(t);
  const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => post(ta, '/v1/auth/request', { email: OWNER }, `203.0.113.${30 + i}`)));
  t.deepEqual(statuses(answers), { 202: 3, 429: 7 });
  await ta.app.signIn.idle();
  t.is(smtp.messages.filter((m) => m.to.includes(OWNER)).length, 3);
  t.is((await events(ta, 'identity.code_sent')).length, 3);
});

test('45 passwords at once from one client: exactly 30 tries are counted, the rest answer 429', async (t) => {
  const { ta } = await withMail(t);
  const answers = await Promise.all(
    Array.from({ length: 45 }, (_, i) => post(ta, '/v1/auth/password', { email: `u${i}@bank.example`, password: 'not-the-password-0000' }, '203.0.113.50')),
  );
  // A counted try is checked (401), or refused at once because the client already has eight
  // waiting for a hash (503 sign_in_busy): it counts all the same.
  const s = statuses(answers);
  t.is((s[401] ?? 0) + (s[503] ?? 0), 30, JSON.stringify(s));
  t.is(s[429], 15);
  t.true((s[503] ?? 0) > 0, 'one client cannot queue 30 hashes');
  t.is((await events(ta, 'identity.password_wrong')).length, s[401] ?? 0);
  t.is(
    Number((await ta.app.db('auth_limits').where({ kind: 'password_address' }).count({ n: '*' }).first())?.n),
    30,
    'a refused try leaves no row for its address',
  );
  t.is(Number((await ta.app.db('auth_attempts').where({ kind: 'password_client', subject: '203.0.113.50' }).count({ n: '*' }).first())?.n), 30);
});

test('wrong admin tokens: 30 per client per 10 minutes, then 429 even for the right one; recorded at most once a minute with a count, never the token', async (t) => {
  const { ta } = await withMail(t);
  const client = '203.0.113.60';
  const login = (token: string, from = client) => post(ta, '/v1/login', { token }, from);
  const marker = 'wrong-admin-token-marker-7f3a9c';
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => login(`${marker}-${i}`)));
  t.deepEqual(statuses(answers), { 401: 30, 429: 10 });
  const limited = answers.find((r) => r.status === 429)!;
  t.deepEqual(await limited.json(), { error: 'rate_limited', message: 'too many attempts: try again in 600 s' });
  t.is(limited.headers.get('retry-after'), '600');
  t.is((await login(ADMIN_TOKEN)).status, 429, 'the right token waits too: the limit is checked before the token');
  t.is((await login(ADMIN_TOKEN, '203.0.113.61')).status, 200, 'another client is not limited (no send yet: break-glass)');

  const refused = async () => (await events(ta, 'identity.token_sign_in_refused')).filter((e) => e.data.why === 'wrong_token');
  let ev = await refused();
  t.is(ev.length, 1, 'the first refusal is recorded at once, the rest wait a minute');
  t.like(ev[0], { actor: 'anonymous', data: { client, wrong: 1, rate_limited: 0 } });

  await ta.app.tick();
  t.is((await refused()).length, 1, 'nothing more within the minute');
  ta.clock.advance(MINUTE);
  await ta.app.tick();
  ev = await refused();
  t.is(ev.length, 2, 'the tick writes what the minute held');
  t.like(ev[1], { data: { client, wrong: 29, rate_limited: 11 } });
  await ta.app.tick();
  t.is((await refused()).length, 2, 'nothing twice');

  ta.clock.advance(MINUTE);
  t.is((await login('another-wrong-one')).status, 429);
  t.is((await refused()).length, 3, 'a minute after the last event the next refusal is recorded at once');

  ta.clock.advance(10 * MINUTE);
  t.is((await login(ADMIN_TOKEN)).status, 200, 'after 10 minutes the right token is looked at again');
  const ledger = JSON.stringify((await ta.call('GET', '/v1/ledger?limit=2000')).body);
  t.false(ledger.includes(marker), 'no token in the ledger');
  t.false(ta.logs.join('\n').includes(marker), 'no token in the log');
  t.false(ledger.includes(ADMIN_TOKEN));
});

test('a break-glass session ends when break-glass closes: mail works, and the old token answers 401', async (t) => {
  const smtp = await startSmtp(t);
  const ta = await startApp(t, { env: { SERVICE_MAIL_CA_FILE: smtp.caFile } });
  await makeOperating(ta, OWNER);
  const glass = await breakGlass(ta);
  const other = await breakGlass(ta);
  t.is((await ta.call('GET', '/v1/auth/me', { token: glass })).status, 200);
  t_ok(
    await ta.call('PUT', '/v1/settings/mail', {
      token: glass,
      body: { smtp_host: smtp.host, smtp_port: smtp.port, smtp_security: 'starttls', mail_from: 'oncall@bank.example' },
    }),
    200,
  );
  t_ok(await ta.call('POST', '/v1/settings/mail/test', { token: glass, body: { to: OWNER } }), 200);
  t.is(smtp.messages.length, 1);
  for (const token of [glass, other]) {
    const after = await ta.call('GET', '/v1/auth/me', { token });
    t.is(after.status, 401);
    t.regex(after.body.message, /break-glass has closed/);
    t.is(
      (await ta.call('POST', '/v1/people', { token, body: { email: 'mallory@bank.example', name: 'M', role: 'owner' } })).status,
      401,
      'it can no longer make an owner',
    );
  }
  const closed = await events(ta, 'identity.break_glass_closed');
  t.is(closed.length, 1);
  t.is(closed[0]!.data.sessions_ended, 2);
  // Even when break-glass opens again, the ended sessions stay ended.
  smtp.refuse('rcpt');
  t.is((await ta.call('POST', '/v1/settings/mail/test', { body: { to: OWNER } })).status, 502);
  t.is((await ta.call('GET', '/v1/auth/me', { token: glass })).status, 401);
});

test('a break-glass sign-in racing the send that closes break-glass: the session it opened ends, and it answers use_email', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta, OWNER);
  const sessions = new SessionService({ repo: new SessionsRepo(ta.app.db), clock: ta.clock, access: { allows: async () => true } });
  const limits = new RateLimits({ repo: new AttemptsRepo(ta.app.db), locks: new LimitLocksRepo(ta.app.db), clock: ta.clock, work: new UnitOfWork(ta.app.db) });
  // Open when first read, closed when read again after the session committed (a send succeeded in between).
  const reads = [true, false];
  const admin = new AdminLoginService({
    breakGlass: async () => ({ open: reads.shift() ?? false, reason: null }),
    sessions,
    limits,
    refusals: new Refusals({ locks: new LimitLocksRepo(ta.app.db), limits, ledger: ta.app.ledger, clock: ta.clock }),
    ledger: ta.app.ledger,
  });
  const err = await t.throwsAsync(admin.login('203.0.113.70'));
  t.is((err as AppError).code, 'use_email');
  const rows = await ta.app.db('sessions').where({ via: 'break_glass' });
  t.is(rows.length, 1);
  t.is(rows[0].end_reason, 'break_glass_closed', 'the session it opened has ended');
});

for (const [what, body] of [
  ['null', 'null'],
  ['an array', '[]'],
  ['a number', '7'],
  ['a string', '"x"'],
] as const) {
  test(`a body of ${what} where an object is expected answers 400 on every people and sign-in route`, async (t) => {
    const ta = await startApp(t);
    await makeOperating(ta, OWNER);
    t_ok(await ta.call('POST', '/v1/people', { body: { email: PERSON, name: 'Ada', role: 'viewer' } }), 201);
    const routes: Array<[string, string, string | null]> = [
      ['POST', `/v1/people/${PERSON}/password`, ADMIN_TOKEN],
      ['POST', '/v1/people', ADMIN_TOKEN],
      ['PATCH', `/v1/people/${PERSON}`, ADMIN_TOKEN],
      ['PUT', '/v1/settings/access', ADMIN_TOKEN],
      ['POST', '/v1/auth/bootstrap', ADMIN_TOKEN],
      ['POST', '/v1/login', null],
      ['POST', '/v1/auth/request', null],
      ['POST', '/v1/auth/verify', null],
      ['POST', '/v1/auth/password', null],
    ];
    for (const [method, path, token] of routes) {
      const res = await ta.call(method, path, { token, body });
      t.is(res.status, 400, `${method} ${path}: ${JSON.stringify(res.body)}`);
      t.is(res.body.error, 'invalid_body', `${method} ${path}`);
    }
    t.is((await events(ta, 'identity.password_set')).length, 0, 'no password was given');
    t.is((await ta.call('POST', `/v1/people/${PERSON}/password`, {})).status, 201, 'no body at all means the defaults');
  });
}
