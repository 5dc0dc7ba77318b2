import type { ExecutionContext } from 'ava';
import { signLicence, testVendor } from '../helpers/app.ts';
import { mariadbTest } from '../helpers/db.ts';
import { startHostProcesses, type HostProcess } from '../helpers/host-process.ts';
import { startSmtp } from '../helpers/smtp.ts';
import { lockRuleBroken } from '../helpers/lock-rule.ts';

/**
 * The sign-in limits hold exactly with two host processes on one MariaDB database, requests
 * spread over both at once. Always runs on MariaDB, even in the SQLite pass: one SQLite file
 * has one host process. Each case names its own client with X-Forwarded-For (127.0.0.1 is a
 * trusted proxy here), so the cases do not share a client limit.
 */
const ADMIN_TOKEN = 'admin-token-for-sign-in-processes-0123456789';
const OWNER = 'owner@bank.example';
const PERSON = 'ada@bank.example';

type Answer = { status: number; body: any; retryAfter: string | null };

async function call(h: HostProcess, method: string, route: string, opts: { token?: string; body?: unknown; client?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  if (opts.client !== undefined) headers['x-forwarded-for'] = opts.client;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(h.base + route, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* keep the text */
  }
  return { status: res.status, body, retryAfter: res.headers.get('retry-after') };
}

const tally = (xs: Answer[]): Record<number, number> => xs.reduce<Record<number, number>>((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {});

/** `n` requests at once, alternating between the hosts. */
const spread = (hosts: HostProcess[], n: number, one: (h: HostProcess, i: number) => Promise<Answer>) =>
  Promise.all(Array.from({ length: n }, (_, i) => one(hosts[i % hosts.length]!, i)));

async function ledger(h: HostProcess, type: string): Promise<Array<{ type: string; data: any }>> {
  return (await call(h, 'GET', `/v1/ledger?type=${type}&order=asc&limit=2000`, { token: ADMIN_TOKEN })).body.events;
}

function must(t: ExecutionContext, res: Answer, status: number, what: string): void {
  if (res.status !== status) t.fail(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
}

await mariadbTest('two host processes on one MariaDB: every sign-in limit holds exactly under concurrent requests spread over both', async (t) => {
  t.timeout(170_000);
  const smtp = await startSmtp(t);
  const hosts = await startHostProcesses(t, 2, {
    SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
    SERVICE_SECRET_KEY: 'secret-key-shared-by-both-hosts-0123456789',
    SERVICE_LICENCE_PUBKEY: testVendor.publicKeyPem,
    SERVICE_MAIL_CA_FILE: smtp.caFile,
    SERVICE_TRUSTED_PROXIES: '127.0.0.1,::1',
  });
  const [one] = hosts as [HostProcess, HostProcess];
  must(t, await call(one, 'POST', '/v1/licence', { token: ADMIN_TOKEN, body: { licence: signLicence() } }), 200, 'licence');
  must(t, await call(one, 'POST', '/v1/auth/bootstrap', { token: ADMIN_TOKEN, body: { email: OWNER, name: 'First Owner' } }), 201, 'bootstrap');
  must(
    t,
    await call(one, 'PUT', '/v1/settings/mail', {
      token: ADMIN_TOKEN,
      body: { smtp_host: smtp.host, smtp_port: smtp.port, smtp_security: 'starttls', mail_from: 'oncall@bank.example' },
    }),
    200,
    'mail settings',
  );
  must(t, await call(one, 'POST', '/v1/people', { token: ADMIN_TOKEN, body: { email: PERSON, name: 'Ada', role: 'viewer' } }), 201, 'person');
  const given = await call(one, 'POST', `/v1/people/${PERSON}/password`, { token: ADMIN_TOKEN, body: { expires: '30d' } });
  must(t, given, 201, 'password');
  const password = given.body.password as string;

  // 40 code requests from one client: exactly 20 accepted.
  const codes = await spread(hosts, 40, (h, i) => call(h, 'POST', '/v1/auth/request', { body: { email: `p${i}@bank.example` }, client: '203.0.113.1' }));
  t.deepEqual(tally(codes), { 202: 20, 429: 20 }, '40 code requests from one client');
  const codeRefusals = (await ledger(one, 'identity.code_rate_limited')).filter((e) => e.data.client === '203.0.113.1');
  t.is(codeRefusals.length, 1, 'the 429s are one event (the rest within the minute wait for it to pass)');

  // 10 code requests for one address, from different clients: exactly 3 codes sent.
  const forOwner = await spread(hosts, 10, (h, i) => call(h, 'POST', '/v1/auth/request', { body: { email: OWNER }, client: `203.0.113.${100 + i}` }));
  t.deepEqual(tally(forOwner), { 202: 3, 429: 7 }, '10 code requests for one address');
  const deadline = Date.now() + 20_000;
  while ((await ledger(one, 'identity.code_sent')).length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  t.is((await ledger(one, 'identity.code_sent')).length, 3, 'three codes sent');
  t.is(smtp.messages.filter((m) => m.to.includes(OWNER)).length, 3, 'three codes arrived');

  // 45 passwords from one client: exactly 30 tries counted.
  const tries = await spread(hosts, 45, (h, i) =>
    call(h, 'POST', '/v1/auth/password', { body: { email: `u${i}@bank.example`, password: 'not-the-password-0000' }, client: '203.0.113.2' }),
  );
  // Counted: checked (401), or refused at once with 503 for having eight waiting for a hash on that host.
  const tried = tally(tries);
  t.is((tried[401] ?? 0) + (tried[503] ?? 0), 30, `45 passwords from one client: ${JSON.stringify(tried)}`);
  t.is(tried[429], 15);

  // 35 code checks from one client: exactly 30 checked.
  const checks = await spread(hosts, 35, (h, i) =>
    call(h, 'POST', '/v1/auth/verify', { body: { email: `v${i}@bank.example`, code: '123456' }, client: '203.0.113.6' }),
  );
  t.deepEqual(tally(checks), { 401: 30, 429: 5 }, '35 code checks from one client');

  // Nineteen wrong passwords and the right one: no session once the address is locked.
  // From ten clients (a client's tries beyond eight waiting for a hash are refused with 503 before reaching the address).
  const wrong = spread(hosts, 19, (h, i) =>
    call(h, 'POST', '/v1/auth/password', { body: { email: PERSON, password: `wrong-password-${i}-0000` }, client: `203.0.113.${100 + (i % 10)}` }),
  );
  const right = call(hosts[1]!, 'POST', '/v1/auth/password', { body: { email: PERSON, password }, client: '203.0.113.109' });
  await Promise.all([wrong, right]);
  const evs = (await ledger(one, 'identity.')).filter(
    (e) => (e.type === 'identity.password_wrong' || e.type === 'identity.signed_in') && e.data.email === PERSON,
  );
  t.is(evs.length, 20, 'each try is one event');
  t.is(lockRuleBroken(evs), null, 'the lock rule holds in ledger order');
  t.is((await call(one, 'POST', '/v1/auth/password', { body: { email: PERSON, password }, client: '203.0.113.4' })).status, 401, 'the address is locked');

  // 40 wrong admin tokens from one client: exactly 30 counted, one event recorded so far.
  const tokens = await spread(hosts, 40, (h, i) => call(h, 'POST', '/v1/login', { body: { token: `wrong-admin-token-${i}` }, client: '203.0.113.5' }));
  t.deepEqual(tally(tokens), { 401: 30, 429: 10 }, '40 wrong admin tokens from one client');
  const refused = (await ledger(one, 'identity.token_sign_in_refused')).filter((e) => e.data.client === '203.0.113.5');
  t.is(refused.length, 1, 'one event, not one per try');

  for (const h of hosts) t.false(h.exited(), `${h.name} is still running`);
});
