import test, { type ExecutionContext } from 'ava';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { CLIENT_ID, CLIENT_SECRET, followProvider, startProvider, type TestProvider } from '../helpers/oidc.ts';
import { testNeeding } from '../helpers/needs.ts';
import { slapdMissing, startSlapd } from '../helpers/slapd.ts';
import { ldapSettings, ledgerOf, MAPPINGS } from '../helpers/sso.ts';

/**
 * Single sign-on against npm's oidc-provider on loopback: the authorization code flow with
 * PKCE, state and nonce, the ID token checked by openid-client, the ticket redeemed once within
 * 60 s, and every refusal leaving nothing half-made and one event saying why. SQLite and MariaDB.
 */

const ACCOUNTS = {
  ada: { email: 'ada@bank.example', name: 'Ada Lovelace', groups: ['oncall-owners'] },
  grace: { email: 'Grace@Bank.example', name: 'Grace Hopper', groups: ['sso-admins', 'payments-team'] },
  nobody: { email: 'nobody@bank.example', name: 'No Groups', groups: ['unmapped'] },
  stranger: { email: 'stranger@elsewhere.example', name: 'Stranger', groups: ['oncall-owners'] },
  unverified: { email: 'unverified@bank.example', name: 'Unverified', groups: ['sso-admins'], email_verified: false },
};

async function setUp(t: ExecutionContext): Promise<{ ta: TestApp; idp: TestProvider }> {
  t.timeout(90_000);
  const ta = await startApp(t, { manualTick: true });
  await makeOperating(ta);
  const idp = await startProvider(t, `${ta.base}/v1/auth/sso/callback`, ACCOUNTS);
  const saved = await ta.call('PUT', '/v1/settings/sso', {
    body: {
      console_address: ta.base,
      label: 'Sign in with Bank ID',
      oidc: { issuer: idp.issuer, client_id: CLIENT_ID, client_secret: CLIENT_SECRET },
      mappings: [
        { group: 'oncall-owners', role: 'owner' },
        { group: 'sso-admins', role: 'admin', teams: ['payments'] },
        { group: 'payments-team', role: 'viewer', tags: ['pager'] },
      ],
    },
  });
  if (saved.status !== 200) throw new Error(JSON.stringify(saved.body));
  return { ta, idp };
}

/** The browser's trip: start → the provider (who signs in as `who`) → back at the callback URL. */
async function toCallback(ta: TestApp, idp: TestProvider, who: string, returnTo = '/episodes'): Promise<string> {
  idp.next = who;
  const start = await fetch(`${ta.base}/v1/auth/sso/start?return_to=${encodeURIComponent(returnTo)}`, { redirect: 'manual' });
  if (start.status !== 302) throw new Error(`start: ${start.status} ${await start.text()}`);
  return followProvider(start.headers.get('location')!, `${ta.base}/v1/auth/sso/callback`);
}

/** The service's callback: where it sends the browser. */
async function callback(url: string): Promise<string> {
  const res = await fetch(url, { redirect: 'manual' });
  if (res.status !== 302) throw new Error(`callback: ${res.status} ${await res.text()}`);
  return res.headers.get('location')!;
}

const ticketOf = (location: string): string => new URL(location, 'http://x').searchParams.get('sso') ?? '';
const redeem = (ta: TestApp, ticket: string) => ta.call('POST', '/v1/auth/sso/redeem', { token: null, body: { ticket } });
const people = async (ta: TestApp) => (await ta.call('GET', '/v1/people')).body.people as Array<{ email: string }>;

test('a good sign-in: PKCE S256, state and nonce at the provider; the ticket gives the session once; the person comes from their groups', async (t) => {
  const { ta, idp } = await setUp(t);
  const status = (await ta.call('GET', '/v1/status', { token: null })).body.auth.sso;
  t.deepEqual(status, { mode: 'oidc', label: 'Sign in with Bank ID', local: true });
  const start = await fetch(`${ta.base}/v1/auth/sso/start?return_to=/episodes/e1`, { redirect: 'manual' });
  const auth = new URL(start.headers.get('location')!);
  t.is(auth.origin, idp.issuer);
  t.is(auth.searchParams.get('code_challenge_method'), 'S256');
  t.truthy(auth.searchParams.get('state'));
  t.truthy(auth.searchParams.get('nonce'));
  t.is(auth.searchParams.get('redirect_uri'), `${ta.base}/v1/auth/sso/callback`);
  t.false(auth.searchParams.has('code_verifier'));

  const back = await callback(await toCallback(ta, idp, 'grace', '/episodes/e1'));
  t.regex(back, /^\/\?sso=[A-Za-z0-9_-]{43}$/);
  const ticket = ticketOf(back);
  const session = await redeem(ta, ticket);
  t.is(session.status, 200, JSON.stringify(session.body));
  t.like(session.body, { return_to: '/episodes/e1', user: { email: 'grace@bank.example', role: 'admin', teams: ['payments'], tags: ['pager'] } });
  const me = await ta.call('GET', '/v1/auth/me', { token: session.body.token });
  t.like(me.body, { actor: 'grace@bank.example', role: 'admin' });
  t.like(
    (await people(ta)).find((p) => p.email === 'grace@bank.example'),
    { directory: true, enabled: true },
  );

  // Once: a second redeem of the same ticket is refused.
  const again = await redeem(ta, ticket);
  t.is(again.status, 401);
  t.is(again.body.error, 'invalid_ticket');
  const refused = await ledgerOf(ta, 'identity.sso_refused');
  t.deepEqual(
    refused.map((e) => e.data.why),
    ['ticket_replayed'],
  );
  const signedIn = await ledgerOf(ta, 'identity.signed_in');
  t.like(signedIn.at(-1)!.data, { email: 'grace@bank.example', via: 'sso', refreshable: false });
  const everything = JSON.stringify((await ta.call('GET', '/v1/ledger?limit=2000')).body) + ta.logs.join('\n');
  t.false(everything.includes(CLIENT_SECRET), 'the client secret is in the ledger or the logs');
  t.false(everything.includes(ticket), 'the ticket is in the ledger or the logs');
});

test('a ticket redeemed after 60 s is refused; a return path that leaves the console becomes /', async (t) => {
  const { ta, idp } = await setUp(t);
  const back = await callback(await toCallback(ta, idp, 'ada', '//evil.example/x'));
  ta.clock.advance(61_000);
  const late = await redeem(ta, ticketOf(back));
  t.is(late.status, 401);
  t.deepEqual(
    (await ledgerOf(ta, 'identity.sso_refused')).map((e) => e.data.why),
    ['ticket_expired'],
  );
  ta.clock.advance(-61_000);
  const fresh = await redeem(ta, ticketOf(await callback(await toCallback(ta, idp, 'ada', '//evil.example/x'))));
  t.is(fresh.status, 200);
  t.is(fresh.body.return_to, '/');
});

test('each refusal makes nothing and writes one event saying why: wrong state, replayed code, forged, wrong audience, expired, wrong nonce, outside the policy, no mapped group, unverified address', async (t) => {
  const { ta, idp } = await setUp(t);
  const before = await people(ta);
  const expectRefusal = async (go: () => Promise<string>, why: string) => {
    const n = (await ledgerOf(ta, 'identity.sso_refused')).length;
    t.is(await go(), `/?sso_error=${why}`, why);
    const events = await ledgerOf(ta, 'identity.sso_refused');
    t.is(events.length, n + 1, `one event for ${why}`);
    t.is(events.at(-1)!.data.why, why);
    t.deepEqual(await people(ta), before, `nobody added or changed (${why})`);
  };

  // Wrong state: the provider's answer with a state this service never gave.
  const good = await toCallback(ta, idp, 'ada');
  const wrongState = new URL(good);
  wrongState.searchParams.set('state', 'made-up-state');
  await expectRefusal(() => callback(wrongState.toString()), 'state');
  // The real answer still works once; replaying it (same state) is refused, and so is its code under a new state.
  const ok = await callback(good);
  t.regex(ok, /^\/\?sso=/);
  before.splice(0, before.length, ...(await people(ta)));
  await expectRefusal(() => callback(good), 'state');
  const second = new URL(await toCallback(ta, idp, 'ada'));
  second.searchParams.set('code', new URL(good).searchParams.get('code')!);
  await expectRefusal(() => callback(second.toString()), 'code_rejected');

  for (const [tamper, why] of [
    ['forged', 'signature'],
    ['audience', 'audience'],
    ['expired', 'expired'],
    ['nonce', 'nonce'],
  ] as const) {
    idp.tamper = tamper;
    await expectRefusal(async () => callback(await toCallback(ta, idp, 'grace')), why);
  }
  idp.tamper = null;
  await expectRefusal(async () => callback(await toCallback(ta, idp, 'stranger')), 'outside_policy');
  await expectRefusal(async () => callback(await toCallback(ta, idp, 'nobody')), 'not_added');
  await expectRefusal(async () => callback(await toCallback(ta, idp, 'unverified')), 'email_not_verified');
  // The ledger still verifies.
  t.true((await ta.call('GET', '/v1/ledger/verify')).body.ok);
});

test('without refresh tokens the session ends after recheck_hours; with them the provider is asked again and its refusal suspends the person', async (t) => {
  const { ta, idp } = await setUp(t);
  const plain = await redeem(ta, ticketOf(await callback(await toCallback(ta, idp, 'grace'))));
  ta.clock.advance(8 * 3_600_000);
  const ended = await ta.call('GET', '/v1/auth/me', { token: plain.body.token });
  t.is(ended.status, 401);
  t.regex(ended.body.message, /identity provider again/);

  idp.refreshTokens = true;
  const refreshed = await redeem(ta, ticketOf(await callback(await toCallback(ta, idp, 'grace'))));
  t.is(refreshed.status, 200);
  t.like((await ledgerOf(ta, 'identity.signed_in')).at(-1)!.data, { refreshable: true });
  // Eight hours on: the provider says yes, the session goes on.
  ta.clock.advance(8 * 3_600_000);
  await ta.app.tick();
  await ta.app.sso.idle();
  t.is(idp.refreshes, 1);
  t.is((await ta.call('GET', '/v1/auth/me', { token: refreshed.body.token })).status, 200);
  // Eight more: the provider refuses; the person is suspended and the session ends.
  idp.refuseRefresh = true;
  ta.clock.advance(8 * 3_600_000);
  await ta.app.tick();
  await ta.app.sso.idle();
  const gone = await ta.call('GET', '/v1/auth/me', { token: refreshed.body.token });
  t.is(gone.status, 401);
  t.like(
    (await people(ta)).find((p) => p.email === 'grace@bank.example'),
    { enabled: false, suspended: 'provider' },
  );
  t.like((await ledgerOf(ta, 'identity.person_suspended'))[0]!.data, {
    email: 'grace@bank.example',
    why: 'provider_refused',
    suspended: true,
    sessions_ended: 1,
  });
  // Signing in through the provider again (it accepts the person once more) makes them active.
  idp.refuseRefresh = false;
  const back = await redeem(ta, ticketOf(await callback(await toCallback(ta, idp, 'grace'))));
  t.is(back.status, 200);
  t.like(
    (await people(ta)).find((p) => p.email === 'grace@bank.example'),
    { enabled: true, suspended: null },
  );
});

test('settings: the client secret is write-only and needed again for another issuer; single sign-on needs the console address; the test reads the provider', async (t) => {
  const { ta, idp } = await setUp(t);
  const view = (await ta.call('GET', '/v1/settings/sso')).body;
  t.like(view, {
    console_address: ta.base,
    console_address_source: 'setting',
    oidc: { client_secret_set: true, redirect_uri: `${ta.base}/v1/auth/sso/callback` },
  });
  t.false(JSON.stringify(view).includes(CLIENT_SECRET));
  const moved = await ta.call('PUT', '/v1/settings/sso', { body: { oidc: { issuer: 'https://login.evil.example', client_id: CLIENT_ID } } });
  t.is(moved.status, 400);
  t.is(moved.body.error, 'secret_required');
  const noAddress = await ta.call('PUT', '/v1/settings/sso', { body: { console_address: null } });
  t.is(noAddress.status, 409);
  t.is(noAddress.body.error, 'console_address_required');
  const test = await ta.call('POST', '/v1/settings/sso/test');
  t.like(test.body, { oidc: { ok: true, issuer: idp.issuer }, ldap: null });
  const http = await ta.call('PUT', '/v1/settings/sso', { body: { oidc: { issuer: 'http://idp.bank.example', client_id: 'x', client_secret: 'y' } } });
  t.is(http.status, 400, 'an http issuer off this machine is refused');
});

test('the console address: SERVICE_PUBLIC_URL makes it read-only (409); bootstrap takes it from the first-start form', async (t) => {
  const env = await startApp(t, { env: { SERVICE_PUBLIC_URL: 'https://oncall.bank.example/' } });
  await makeOperating(env);
  t.like((await env.call('GET', '/v1/settings/sso')).body, { console_address: 'https://oncall.bank.example', console_address_source: 'env' });
  const change = await env.call('PUT', '/v1/settings/sso', { body: { console_address: 'https://other.example' } });
  t.is(change.status, 409);
  t.is(change.body.error, 'console_address_managed');
  t.is((await env.call('PUT', '/v1/settings/sso', { body: { console_address: 'https://oncall.bank.example' } })).status, 200, 'the same value is fine');

  const ta = await startApp(t);
  t.is((await ta.call('POST', '/v1/licence', { body: { licence: (await import('../helpers/app.ts')).signLicence() } })).status, 200);
  const bad = await ta.call('POST', '/v1/auth/bootstrap', { body: { email: 'owner@bank.example', name: 'Owner', console_address: 'javascript:alert(1)' } });
  t.is(bad.status, 400);
  const boot = await ta.call('POST', '/v1/auth/bootstrap', {
    body: { email: 'owner@bank.example', name: 'Owner', console_address: 'https://oncall.bank.example:8700' },
  });
  t.is(boot.status, 201);
  t.is((await ta.call('GET', '/v1/settings/sso')).body.console_address, 'https://oncall.bank.example:8700');
});

test('limits, under concurrent requests (100 at a time): 300 starts and callbacks and 150 redeems per client in 10 minutes, on the injected clock', async (t) => {
  const { ta, idp } = await setUp(t);
  // 100 at a time: one address may hold at most 256 connections (docs/security.md), and fetch
  // opens one per request in flight, so 310 at once would have the service close some of them.
  const starts: Response[] = [];
  for (let i = 0; i < 310; i += 100)
    starts.push(...(await Promise.all(Array.from({ length: Math.min(100, 310 - i) }, () => fetch(`${ta.base}/v1/auth/sso/start`, { redirect: 'manual' })))));
  const where = starts.map((r) => r.headers.get('location') ?? '');
  t.is(where.filter((l) => l.startsWith(idp.issuer)).length, 300);
  t.is(where.filter((l) => l === '/?sso_error=rate_limited').length, 10);
  const redeems: Array<Awaited<ReturnType<typeof redeem>>> = [];
  for (let i = 0; i < 160; i += 80) redeems.push(...(await Promise.all(Array.from({ length: 80 }, (_, j) => redeem(ta, `made-up-ticket-${i + j}`)))));
  const by = redeems.reduce<Record<number, number>>((a, r) => ({ ...a, [r.status]: (a[r.status] ?? 0) + 1 }), {});
  t.deepEqual(by, { 401: 150, 429: 10 });
  t.is((await ledgerOf(ta, 'identity.sso_refused')).length, 150, 'one event per redeem looked at, none per refused one');
  ta.clock.advance(10 * 60_000 + 1000);
  t.is((await redeem(ta, 'made-up-ticket')).status, 401, 'ten minutes later tickets are looked at again');
  t.true((await fetch(`${ta.base}/v1/auth/sso/start`, { redirect: 'manual' })).headers.get('location')!.startsWith(idp.issuer));
});

testNeeding(
  slapdMissing,
  'with a directory synced, a provider that sends no groups claim signs directory people in as the sync left them, and nobody new',
  async (t) => {
    const { ta, idp } = await setUp(t);
    const slapd = await startSlapd(t);
    idp.accounts.set('grace-no-groups', { email: 'grace@bank.example', name: 'Grace Hopper' });
    idp.accounts.set('new-no-groups', { email: 'p001@bank.example', name: 'Filler' });
    const settings = (await ta.call('GET', '/v1/settings/sso')).body;
    t.is((await ta.call('PUT', '/v1/settings/sso', { body: { ...settings, ldap: ldapSettings(slapd), mappings: MAPPINGS } })).status, 200);
    t.true((await ta.call('POST', '/v1/settings/sso/sync')).body.ok);
    const grace = await redeem(ta, ticketOf(await callback(await toCallback(ta, idp, 'grace-no-groups'))));
    t.is(grace.status, 200);
    t.like(grace.body.user, { email: 'grace@bank.example', role: 'admin', teams: ['payments'] });
    t.is(await callback(await toCallback(ta, idp, 'new-no-groups')), '/?sso_error=not_added');
  },
);
