import test from 'ava';
import { MINUTE, TestClock } from '../../host/clock.ts';
import { events, pair, startInstall } from '../helpers/keychain.ts';

// The keychain between installs in one test process: each install its own data directory and
// database (SQLite, or MariaDB under TEST_DATABASE_URL) on a loopback port, all on one clock.
// Three real host processes: keychain-processes.test.ts.

const clock = () => new TestClock('2026-06-01T08:00:00.000Z');

test('a member pairs with the home by a site key within the window: both learn each other’s fingerprint, and each records it', async (t) => {
  const c = clock();
  const [home, dr] = await Promise.all([startInstall(t, 'prod', { clock: c }), startInstall(t, 'dr', { clock: c })]);
  const made = await home.call('POST', '/v1/keychain/home', { name: 'prod', address: home.base });
  t.is(made.status, 200, JSON.stringify(made.body));
  t.like(made.body, { role: 'home', install: 'prod', members: [], scope: [] });
  const key = await home.call('POST', '/v1/keychain/site-keys');
  t.is(key.status, 201);
  t.regex(key.body.site_key, /^kc1\.[0-9a-f]{32}\.[A-Za-z0-9_-]{43}$/);
  t.is(key.body.expires_at, new Date(c.now().getTime() + 10 * MINUTE).toISOString());

  c.advance(9 * MINUTE + 59_000);
  const joined = await dr.call('POST', '/v1/keychain/join', { home: home.base, site_key: key.body.site_key, name: 'dr', address: dr.base });
  t.is(joined.status, 200, JSON.stringify(joined.body));
  const homeFp = (await home.call('GET', '/v1/status')).body.fingerprint;
  const drFp = (await dr.call('GET', '/v1/status')).body.fingerprint;
  t.like(joined.body, {
    role: 'member',
    install: 'dr',
    fingerprint: drFp,
    home: { install: 'prod', fingerprint: homeFp, address: home.base },
    sync: { ok: true },
  });

  const view = (await home.call('GET', '/v1/keychain')).body;
  t.is(view.members.length, 1);
  t.like(view.members[0], { install: 'dr', fingerprint: drFp, address: dr.base, state: 'active' });
  t.is(view.keychain_fingerprint, joined.body.keychain_fingerprint);
  t.deepEqual(view.site_keys, [], 'a used site key is no longer open');

  const paired = await events(home, 'config.keychain_paired');
  t.is(paired.length, 1);
  t.like(paired[0], { data: { install: 'dr', fingerprint: drFp, address: dr.base, site_key: key.body.id, installs: 2, installs_allowed: 10 } });
  const joinedEvents = await events(dr, 'config.keychain_joined');
  t.like(joinedEvents[0], { actor: 'admin-token', data: { home: { install: 'prod', fingerprint: homeFp, address: home.base } } });
  t.true((await home.call('GET', '/v1/ledger/verify')).body.ok);
  t.true((await dr.call('GET', '/v1/ledger/verify')).body.ok);
});

test('a site key after its 10-minute window is refused, and the refusal recorded on the home', async (t) => {
  const c = clock();
  const [home, dr] = await Promise.all([startInstall(t, 'prod', { clock: c }), startInstall(t, 'dr', { clock: c })]);
  await home.call('POST', '/v1/keychain/home', { name: 'prod', address: home.base });
  const key = await home.call('POST', '/v1/keychain/site-keys');
  c.advance(10 * MINUTE);
  const late = await dr.call('POST', '/v1/keychain/join', { home: home.base, site_key: key.body.site_key, address: dr.base });
  t.is(late.status, 403);
  t.is(late.body.error, 'site_key_expired');
  t.regex(late.body.message, /expired/);
  t.is((await dr.call('GET', '/v1/keychain')).body.role, 'none');
  t.is((await home.call('GET', '/v1/keychain')).body.members.length, 0);
  const refused = await events(home, 'config.keychain_pair_refused');
  t.like(refused[0], { data: { error: 'site_key_expired', site_key: key.body.id } });
});

test('a wrong site key, one made on another home, a garbled one and a reused one are all refused; nothing is paired by them', async (t) => {
  const c = clock();
  const [home, other, dr, region] = await Promise.all([
    startInstall(t, 'prod', { clock: c }),
    startInstall(t, 'elsewhere', { clock: c }),
    startInstall(t, 'dr', { clock: c }),
    startInstall(t, 'region', { clock: c }),
  ]);
  await home.call('POST', '/v1/keychain/home', { name: 'prod', address: home.base });
  await other.call('POST', '/v1/keychain/home', { name: 'elsewhere', address: other.base });
  const key = (await home.call('POST', '/v1/keychain/site-keys')).body.site_key as string;
  const join = (i: typeof dr, siteKey: string) => i.call('POST', '/v1/keychain/join', { home: home.base, site_key: siteKey, address: i.base });

  const wrongSecret = key.slice(0, key.lastIndexOf('.') + 1) + 'A'.repeat(43);
  const wrong = await join(dr, wrongSecret);
  t.is(wrong.status, 403);
  t.is(wrong.body.error, 'site_key_invalid');
  const foreign = await join(dr, (await other.call('POST', '/v1/keychain/site-keys')).body.site_key);
  t.is(foreign.status, 403);
  t.is(foreign.body.error, 'site_key_invalid');
  t.regex(foreign.body.message, /not the home this site key was made on/);
  const garbled = await join(dr, 'not-a-site-key');
  t.like(garbled, { status: 403, body: { error: 'site_key_invalid' } });

  t.is((await join(dr, key)).status, 200);
  const reused = await join(region, key);
  t.is(reused.status, 403);
  t.is(reused.body.error, 'site_key_used');
  t.is((await region.call('GET', '/v1/keychain')).body.role, 'none');
  t.deepEqual(
    (await home.call('GET', '/v1/keychain')).body.members.map((m: { install: string }) => m.install),
    [new URL(dr.base).host],
  );
  const refused = (await events(home, 'config.keychain_pair_refused')).map((e) => e.data.error);
  t.deepEqual(refused, ['site_key_invalid', 'site_key_used']);
});

test('two installs joining at once with one site key: exactly one is paired', async (t) => {
  const c = clock();
  const [home, a, b] = await Promise.all([startInstall(t, 'prod', { clock: c }), startInstall(t, 'a', { clock: c }), startInstall(t, 'b', { clock: c })]);
  await home.call('POST', '/v1/keychain/home', { name: 'prod', address: home.base });
  const key = (await home.call('POST', '/v1/keychain/site-keys')).body.site_key;
  const answers = await Promise.all([a, b].map((i) => i.call('POST', '/v1/keychain/join', { home: home.base, site_key: key, name: i.name, address: i.base })));
  t.deepEqual(answers.map((r) => r.status).sort(), [200, 403], JSON.stringify(answers.map((r) => r.body.error)));
  t.is(answers.find((r) => r.status === 403)!.body.error, 'site_key_used');
  t.is((await home.call('GET', '/v1/keychain')).body.members.length, 1);
  t.is((await events(home, 'config.keychain_paired')).length, 1);
});

test('the licence: Starter and the trial have no keychain (403 licence_tier naming the tier); Enterprise holds at most its installs, also when joins race; Strategic is a site licence', async (t) => {
  const c = clock();
  const [starter, trial, home, a, b, strategic] = await Promise.all([
    startInstall(t, 'starter', { clock: c, licence: { tier: 'starter', installs: 2, features: [] } }),
    startInstall(t, 'trial', { clock: c, licence: { tier: 'trial', installs: 1, features: [] } }),
    startInstall(t, 'prod', { clock: c, licence: { tier: 'enterprise', installs: 2 } }),
    startInstall(t, 'a', { clock: c }),
    startInstall(t, 'b', { clock: c }),
    startInstall(t, 'group', { clock: c, licence: { tier: 'strategic', installs: null, services: null } }),
  ]);
  for (const [i, named] of [
    [starter, /Starter licence \(tier starter\)/],
    [trial, /a trial licence \(tier trial\)/],
  ] as const) {
    for (const [method, path, body] of [
      ['GET', '/v1/keychain', undefined],
      ['POST', '/v1/keychain/home', {}],
      ['POST', '/v1/keychain/join', { home: home.base, site_key: 'kc1.x.y' }],
    ] as const) {
      const r = await i.call(method, path, body);
      t.is(r.status, 403, `${i.name} ${path}`);
      t.is(r.body.error, 'licence_tier');
      t.regex(r.body.message, named);
    }
  }
  // An Enterprise licence of 2 installs: the home and one member; two joins at once, one wins.
  await home.call('POST', '/v1/keychain/home', { name: 'prod', address: home.base });
  const keys = [(await home.call('POST', '/v1/keychain/site-keys')).body.site_key, (await home.call('POST', '/v1/keychain/site-keys')).body.site_key];
  const answers = await Promise.all(
    [a, b].map((i, n) => i.call('POST', '/v1/keychain/join', { home: home.base, site_key: keys[n], name: i.name, address: i.base })),
  );
  t.deepEqual(answers.map((r) => r.status).sort(), [200, 409]);
  const full = answers.find((r) => r.status === 409)!.body;
  t.is(full.error, 'licence_limit');
  t.regex(full.message, /Enterprise licence allows 2 installs in one keychain/);
  t.like((await home.call('GET', '/v1/keychain')).body.installs, { used: 2, allowed: 2 });

  const made = await strategic.call('POST', '/v1/keychain/home', {});
  t.is(made.status, 200);
  t.like(made.body.installs, { used: 1, allowed: null });
});

const SECRET = 'prom-basic-auth-Zq8-never-in-clear-4d1f';
const SMTP_SECRET = 'smtp-relay-pass-Kx2-never-in-clear-93ab';

const POLICY = {
  default_autonomy: 'off',
  ceilings: { payments: 'L1' },
  safe_for_l2: [],
  always_approve: ['restart_pod'],
  freeze_windows: [],
  max_actions_per_service_per_hour: 3,
};

test('scope changes reach members: each carried part is applied whole with its version and the home’s fingerprint; an own value is kept until released', async (t) => {
  const c = clock();
  const [home, dr] = await Promise.all([startInstall(t, 'prod', { clock: c }), startInstall(t, 'dr', { clock: c })]);
  await pair(t, home, dr);
  const homeFp = (await home.call('GET', '/v1/status')).body.fingerprint;
  t.is((await home.call('PUT', '/v1/policy', POLICY)).status, 200);
  t.is(
    (await home.call('PUT', '/v1/connectors/metrics', { kind: 'prometheus', settings: { url: 'http://127.0.0.1:9/', username: 'svc', password: SECRET } }))
      .status,
    201,
  );
  t.is((await home.call('PUT', '/v1/settings/mail', { smtp_host: 'relay.prod.bank.example', smtp_user: 'oncall', smtp_password: SMTP_SECRET })).status, 200);

  // Nothing is carried until the scope says so.
  const first = (await dr.call('POST', '/v1/keychain/sync')).body.sync;
  t.like(first, { ok: true, applied: [] }, JSON.stringify(first));
  const scoped = await home.call('POST', '/v1/keychain/scope', { parts: ['mail', 'connectors', 'policy'] });
  t.is(scoped.status, 200, JSON.stringify(scoped.body));
  t.deepEqual(scoped.body.scope, ['connectors', 'policy', 'mail']);
  t.like(scoped.body.parts[0], { part: 'connectors', carried: true, version: 1, epoch: 0 });

  const synced = (await dr.call('POST', '/v1/keychain/sync')).body;
  t.deepEqual(
    synced.sync.applied.map((a: { part: string }) => a.part),
    ['connectors', 'policy', 'mail'],
  );
  t.like((await dr.call('GET', '/v1/policy')).body, { ...POLICY, ceilings: { payments: 'L1' } });
  const conn = (await dr.call('GET', '/v1/connectors/metrics')).body;
  t.like(conn, { kind: 'prometheus', settings: { url: 'http://127.0.0.1:9/', username: 'svc', password: { set: true } } });
  t.like((await dr.call('GET', '/v1/settings/mail')).body, { provider: 'smtp', smtp_host: 'relay.prod.bank.example', smtp_password_set: true });
  const applied = await events(dr, 'config.keychain_applied');
  t.deepEqual(
    applied.map((e) => [e.data.part, e.data.version, e.data.home]),
    [
      ['connectors', 1, homeFp],
      ['policy', 1, homeFp],
      ['mail', 1, homeFp],
    ],
  );
  t.like((await events(dr, 'config.connector_saved'))[0], { actor: 'keychain', data: { name: 'metrics', via: 'keychain', secrets_set: ['password'] } });
  t.like(synced.parts[3], { part: 'mail', carried: true, own: false, version: 1 });
  // The home sees what its member applied, as of the member's next poll.
  await dr.call('POST', '/v1/keychain/sync');
  t.like((await home.call('GET', '/v1/keychain')).body.members[0].applied, { connectors: 1, policy: 1, mail: 1 });

  // DR keeps its own mail relay; a new policy still arrives.
  t.is((await home.call('POST', '/v1/keychain/own', { install: 'dr', part: 'mail', own: true })).status, 200);
  // (Another relay: its password is entered again, as for any secret sent to a new address.)
  t.is((await home.call('PUT', '/v1/settings/mail', { smtp_host: 'relay2.prod.bank.example', smtp_password: SMTP_SECRET })).status, 200);
  await home.call('PUT', '/v1/policy', { ...POLICY, max_actions_per_service_per_hour: 5 });
  const second = (await dr.call('POST', '/v1/keychain/sync')).body;
  t.deepEqual(
    second.sync.applied.map((a: { part: string; version: number }) => [a.part, a.version]),
    [['policy', 2]],
  );
  t.like(second.parts[3], { part: 'mail', carried: false, own: true, version: 1 });
  t.is((await dr.call('GET', '/v1/settings/mail')).body.smtp_host, 'relay.prod.bank.example');
  t.like(second.own, [{ install: 'dr', part: 'mail' }]);
  // Released: the home's relay arrives.
  await home.call('POST', '/v1/keychain/own', { install: 'dr', part: 'mail', own: false });
  await dr.call('POST', '/v1/keychain/sync');
  t.is((await dr.call('GET', '/v1/settings/mail')).body.smtp_host, 'relay2.prod.bank.example');
  t.deepEqual(
    (await events(home, 'config.keychain_own_changed')).map((e) => [e.data.install, e.data.part, e.data.own]),
    [
      ['dr', 'mail', true],
      ['dr', 'mail', false],
    ],
  );

  // A part taken out of the scope stays as it was on the member.
  await home.call('POST', '/v1/keychain/scope', { parts: ['policy'] });
  await home.call('DELETE', '/v1/connectors/metrics');
  await dr.call('POST', '/v1/keychain/sync');
  t.is((await dr.call('GET', '/v1/connectors/metrics')).status, 200);
  t.like((await events(home, 'config.keychain_scope_changed')).at(-1), { data: { removed: ['connectors', 'mail'] } });
  t.true((await home.call('GET', '/v1/ledger/verify')).body.ok);
  t.true((await dr.call('GET', '/v1/ledger/verify')).body.ok);
});

test('a tampered bundle is refused and recorded once; the member keeps what it had, and the next genuine version is applied', async (t) => {
  const c = clock();
  const [home, dr] = await Promise.all([startInstall(t, 'prod', { clock: c }), startInstall(t, 'dr', { clock: c })]);
  await pair(t, home, dr);
  await home.call('PUT', '/v1/policy', POLICY);
  await home.call('POST', '/v1/keychain/scope', { parts: ['policy'] });
  await dr.call('POST', '/v1/keychain/sync');
  await home.call('PUT', '/v1/policy', { ...POLICY, default_autonomy: 'shadow' });
  await home.call('POST', '/v1/keychain/sync');
  // Someone with write access to the home's database changes the bundle.
  const row = await home.app.db('keychain_bundles').where({ part: 'policy' }).first();
  t.is(row.version, 2);
  const ct = Buffer.from(row.ct, 'base64url');
  ct[0] = ct[0]! ^ 0xff;
  await home.app
    .db('keychain_bundles')
    .where({ part: 'policy' })
    .update({ ct: ct.toString('base64url') });

  const first = (await dr.call('POST', '/v1/keychain/sync')).body;
  t.deepEqual(first.sync.refused, [{ part: 'policy', epoch: 0, version: 2, reason: 'bad_signature' }]);
  t.like(first.parts[1], { part: 'policy', version: 1, refused: { version: 2, reason: 'bad_signature' } });
  t.is((await dr.call('GET', '/v1/policy')).body.default_autonomy, 'off');
  c.advance(30_000);
  await dr.app.keychain.tick();
  const refused = await events(dr, 'config.keychain_refused');
  t.is(refused.length, 1, 'recorded once, not on every poll');
  t.like(refused[0], {
    actor: 'keychain',
    data: { part: 'policy', version: 2, reason: 'bad_signature', home: (await home.call('GET', '/v1/status')).body.fingerprint },
  });

  await home.call('PUT', '/v1/policy', { ...POLICY, default_autonomy: 'shadow', max_actions_per_service_per_hour: 9 });
  const healed = (await dr.call('POST', '/v1/keychain/sync')).body.sync;
  t.deepEqual(healed.applied, [{ part: 'policy', epoch: 0, version: 3 }]);
  t.like((await dr.call('GET', '/v1/policy')).body, { default_autonomy: 'shadow', max_actions_per_service_per_hour: 9 });
  t.true((await dr.call('GET', '/v1/ledger/verify')).body.ok);
});

test('a home restored from a backup that serves an older version: refused and recorded, then the home issues a version above it', async (t) => {
  const c = clock();
  const [home, dr] = await Promise.all([startInstall(t, 'prod', { clock: c }), startInstall(t, 'dr', { clock: c })]);
  await pair(t, home, dr);
  await home.call('PUT', '/v1/policy', POLICY);
  await home.call('POST', '/v1/keychain/scope', { parts: ['policy'] });
  await dr.call('POST', '/v1/keychain/sync');
  const v1 = await home.app.db('keychain_bundles').where({ part: 'policy' }).first();
  await home.call('PUT', '/v1/policy', { ...POLICY, default_autonomy: 'shadow' });
  t.deepEqual((await dr.call('POST', '/v1/keychain/sync')).body.sync.applied, [{ part: 'policy', epoch: 0, version: 2 }]);
  // The backup: version 1 and the policy it was made of.
  await home.app.db('keychain_bundles').where({ part: 'policy' }).update(v1);
  await home.call('PUT', '/v1/policy', POLICY);

  const older = (await dr.call('POST', '/v1/keychain/sync')).body.sync;
  t.deepEqual(older.refused, [{ part: 'policy', epoch: 0, version: 1, reason: 'older_version' }]);
  t.is((await dr.call('GET', '/v1/policy')).body.default_autonomy, 'shadow', 'nothing older is applied');
  t.like((await events(dr, 'config.keychain_refused'))[0], { data: { part: 'policy', version: 1, reason: 'older_version' } });
  // The member said it applied version 2: the home's next bundle is version 3, which it takes.
  const again = (await dr.call('POST', '/v1/keychain/sync')).body.sync;
  t.deepEqual(again.applied, [{ part: 'policy', epoch: 0, version: 3 }]);
  t.is((await dr.call('GET', '/v1/policy')).body.default_autonomy, 'off');
  t.like((await events(home, 'config.keychain_bundled')).at(-1), { data: { part: 'policy', version: 3, above_applied: 2 } });
});

test('a member not heard from for 3 minutes is not_answering, after a day gone, listed until an owner removes it; removed, it leaves on its next poll', async (t) => {
  const c = clock();
  const [home, dr] = await Promise.all([startInstall(t, 'prod', { clock: c }), startInstall(t, 'dr', { clock: c })]);
  await pair(t, home, dr);
  const state = async () => (await home.call('GET', '/v1/keychain')).body.members[0];
  t.like(await state(), { install: 'dr', state: 'active' });
  c.advance(3 * 60_000 - 1);
  t.is((await state()).state, 'active');
  c.advance(1);
  t.is((await state()).state, 'not_answering');
  const doctorPart = async (i: typeof home) =>
    ((await i.call('GET', '/v1/doctor?fresh=1')).body.components as Array<{ name: string; status: string; detail: string; fix: string | null }>).find(
      (x) => x.name === 'keychain',
    );
  const silent = await doctorPart(home);
  t.like(silent, { status: 'warn' });
  t.regex(silent!.detail, /dr not answering/);
  t.regex(silent!.fix!, /DELETE \/v1\/keychain\/members/);
  c.advance(24 * 60 * 60_000 - 3 * 60_000);
  t.is((await state()).state, 'gone');
  c.advance(30 * 24 * 60 * 60_000);
  await home.app.keychain.tick();
  t.like(await state(), { install: 'dr', state: 'gone' }, 'nothing is removed by itself');
  // It answers again.
  await dr.call('POST', '/v1/keychain/sync');
  t.is((await state()).state, 'active');

  t.is((await dr.call('DELETE', '/v1/keychain/members/dr')).status, 409, 'only the home removes members');
  const removed = await home.call('DELETE', '/v1/keychain/members/dr');
  t.like(removed, { status: 200, body: { install: 'dr', removed: true } });
  t.is((await home.call('DELETE', '/v1/keychain/members/dr')).status, 404);
  t.like((await events(home, 'config.keychain_member_removed'))[0], { actor: 'admin-token', data: { install: 'dr' } });
  await dr.call('POST', '/v1/keychain/sync');
  t.is((await dr.call('GET', '/v1/keychain')).body.role, 'none');
  t.like((await events(dr, 'config.keychain_left'))[0], { actor: 'keychain' });
});

test('the home lost for 15 minutes: an owner on a member takes over with the bundles it holds, the other members follow, and the old home comes back a member and says so', async (t) => {
  const c = clock();
  const [prod, dr, region] = await Promise.all([
    startInstall(t, 'prod', { clock: c }),
    startInstall(t, 'dr', { clock: c }),
    startInstall(t, 'region', { clock: c }),
  ]);
  await pair(t, prod, dr, region);
  await prod.call('PUT', '/v1/policy', POLICY);
  await prod.call('POST', '/v1/keychain/scope', { parts: ['policy', 'mail'] });
  await prod.call('PUT', '/v1/settings/mail', { smtp_host: 'relay.prod.bank.example', smtp_password: SMTP_SECRET });
  await prod.call('POST', '/v1/keychain/own', { install: 'dr', part: 'mail', own: true });
  await dr.call('POST', '/v1/keychain/sync');
  await region.call('POST', '/v1/keychain/sync');
  const drFp = (await dr.call('GET', '/v1/status')).body.fingerprint;

  await prod.stop();
  c.advance(10 * 60_000);
  const early = await dr.call('POST', '/v1/keychain/home', { take_over: true });
  t.is(early.status, 409);
  t.is(early.body.error, 'home_not_lost');
  t.regex(early.body.message, /allowed once it has not been reached for 15 minutes/);
  const failed = (await dr.call('POST', '/v1/keychain/sync')).body;
  t.like(failed.home, { lost: false, last_problem: failed.sync.problem });
  t.regex(failed.sync.problem, /cannot be reached/);
  t.true((await events(dr, 'config.keychain_poll_failed')).length === 1);
  c.advance(5 * 60_000);
  t.true((await dr.call('GET', '/v1/keychain')).body.home.lost);
  const lost = ((await dr.call('GET', '/v1/doctor?fresh=1')).body.components as Array<{ name: string; status: string; detail: string; fix: string }>).find(
    (x) => x.name === 'keychain',
  );
  t.like(lost, { status: 'fail' });
  t.regex(lost!.detail, /the home prod has not answered since/);
  t.regex(lost!.fix, /take_over/);

  const took = await dr.call('POST', '/v1/keychain/home', { take_over: true });
  t.is(took.status, 200, JSON.stringify(took.body));
  t.like(took.body, { role: 'home', epoch: 1, install: 'dr', scope: ['policy'] }, 'its own mail leaves the scope');
  t.like(took.body.parts[1], { part: 'policy', version: 1, epoch: 1 });
  t.deepEqual(took.body.members.map((m: { install: string }) => m.install).sort(), ['prod', 'region']);
  t.like((await events(dr, 'config.keychain_took_over'))[0], {
    actor: 'admin-token',
    data: { epoch: 1, previous_home: { install: 'prod' }, dropped: ['mail'], bundles: ['policy'] },
  });
  // The region learned of it at once and follows the new home.
  t.like((await region.call('GET', '/v1/keychain')).body, { role: 'member', epoch: 1, home: { install: 'dr', fingerprint: drFp } });
  t.like((await events(region, 'config.keychain_home_changed'))[0], { data: { epoch: 1, from: { install: 'prod' }, to: { install: 'dr' } } });
  const regionSync = (await region.call('POST', '/v1/keychain/sync')).body.sync;
  t.deepEqual(regionSync.applied, [{ part: 'policy', epoch: 1, version: 1 }]);
  await dr.call('PUT', '/v1/policy', { ...POLICY, max_actions_per_service_per_hour: 7 });
  t.deepEqual((await region.call('POST', '/v1/keychain/sync')).body.sync.applied, [{ part: 'policy', epoch: 1, version: 2 }]);

  // The old home comes back: the new home's notice reaches it, and it says it is a member now.
  const back = await prod.restart();
  c.advance(30_000);
  await dr.app.keychain.tick();
  const view = (await back.call('GET', '/v1/keychain')).body;
  t.like(view, { role: 'member', epoch: 1, home: { install: 'dr', fingerprint: drFp }, demoted: { epoch: 1, by: { name: 'dr', fingerprint: drFp } } });
  t.like((await events(back, 'config.keychain_demoted'))[0], { actor: 'keychain', data: { epoch: 1, previous_epoch: 0, by: { install: 'dr' } } });
  // As a member it takes the new home's bundles, even of versions below the ones it issued.
  t.deepEqual((await back.call('POST', '/v1/keychain/sync')).body.sync.applied, [{ part: 'policy', epoch: 1, version: 2 }]);
  t.is((await back.call('GET', '/v1/policy')).body.max_actions_per_service_per_hour, 7);
  t.is((await back.call('POST', '/v1/keychain/site-keys')).body.error, 'keychain_not_home');
  for (const i of [back, dr, region]) t.true((await i.call('GET', '/v1/ledger/verify')).body.ok, i.name);
});

const LDAP_SECRET = 'ldap-bind-pass-Vw7-never-in-clear-5e60';

test('every part travels, and no secret of a carried connector, mail or sign-in is ever in clear in a log, an answer or a database column of either install', async (t) => {
  const c = clock();
  const [home, dr] = await Promise.all([startInstall(t, 'prod', { clock: c }), startInstall(t, 'dr', { clock: c })]);
  await pair(t, home, dr);
  const put = async (path: string, body: unknown, status = 200) => {
    const r = await home.call('PUT', path, body);
    t.is(r.status, status, `${path}: ${JSON.stringify(r.body)}`);
  };
  await put('/v1/connectors/metrics', { kind: 'prometheus', settings: { url: 'http://127.0.0.1:9/', username: 'svc', password: SECRET } }, 201);
  await put('/v1/settings/mail', { smtp_host: 'relay.prod.bank.example', smtp_user: 'oncall', smtp_password: SMTP_SECRET });
  await put('/v1/settings/sso', {
    ldap: {
      urls: ['ldaps://ldap.bank.example'],
      bind_dn: 'cn=oncall,ou=services,dc=bank,dc=example',
      bind_password: LDAP_SECRET,
      base_dn: 'dc=bank,dc=example',
    },
    mappings: [{ group: 'oncall-owners', role: 'owner' }],
  });
  await put('/v1/settings/access', { allowed_domains: ['bank.example'], blocked: ['leaver@bank.example'], block_webmail: true });
  await put('/v1/policy', POLICY);
  await put('/v1/estate/overrides', {
    services: {
      payments: {
        owner: 'owner@bank.example',
        team: 'payments',
        tier: 1,
        approvers: ['owner@bank.example'],
        check_settings: { 'prometheus/error-rate': { threshold: 0.02 } },
      },
      ledger: { owner: 'owner@bank.example', tier: 2 },
    },
  });
  const scoped = await home.call('POST', '/v1/keychain/scope', {
    parts: ['connectors', 'policy', 'access_policy', 'mail', 'sso', 'estate_overrides', 'packs_settings'],
  });
  t.is(scoped.status, 200);
  const sync = (await dr.call('POST', '/v1/keychain/sync')).body.sync;
  t.deepEqual(sync.refused, []);
  t.is(sync.applied.length, 7, JSON.stringify(sync));
  t.like((await dr.call('GET', '/v1/settings/access')).body, { allowed_domains: ['bank.example'], blocked: ['leaver@bank.example'], block_webmail: true });
  t.like((await dr.call('GET', '/v1/settings/sso')).body, {
    mode: 'ldap',
    ldap: { bind_password_set: true, base_dn: 'dc=bank,dc=example' },
    mappings: [{ group: 'oncall-owners', role: 'owner' }],
  });
  const overrides = (await dr.call('GET', '/v1/estate/overrides')).body.services;
  t.like(overrides.payments, { team: 'payments', tier: 1, check_settings: { 'prometheus/error-rate': { threshold: 0.02 } } });
  t.like(overrides.ledger, { tier: 2 });

  // An approver who is not a person of the member: the overrides are refused whole, and said so.
  await home.call('POST', '/v1/people', { email: 'approver@bank.example', name: 'Approver', role: 'admin' });
  // (A new tier-3 service: changing a tier-1 service's approvers would wait for two approvals at the home.)
  await put('/v1/estate/overrides', { services: { cards: { owner: 'owner@bank.example', tier: 3, approvers: ['approver@bank.example'] } } });
  const refusal = (await dr.call('POST', '/v1/keychain/sync')).body.sync.refused;
  t.like(refusal, [{ part: 'estate_overrides', reason: 'invalid_body' }]);
  t.regex((await events(dr, 'config.keychain_refused'))[0]!.reason, /approver@bank.example is not a person of this install/);
  t.falsy((await dr.call('GET', '/v1/estate/overrides')).body.services.cards, 'nothing of the refused part was applied');
  await dr.call('POST', '/v1/people', { email: 'approver@bank.example', name: 'Approver', role: 'admin' });
  const retried = (await dr.call('POST', '/v1/keychain/sync')).body.sync.applied;
  t.like(retried, [{ part: 'estate_overrides' }]);

  // The site key's secret is shown once, to the owner who asked.
  const key = (await home.call('POST', '/v1/keychain/site-keys')).body.site_key as string;
  const siteSecret = key.split('.')[2]!;
  const [{ SecretCipher }] = await Promise.all([import('../../host/secrets/cipher.ts')]);
  const contentKeys = await Promise.all(
    [home, dr].map(async (i) => {
      const row = await i.app.db('keychain_state').first();
      return SecretCipher.load(null, i.store.dataDir).decrypt(row.content_key);
    }),
  );
  t.is(contentKeys[0], contentKeys[1], 'both hold the one content key');
  const secrets = [SECRET, SMTP_SECRET, LDAP_SECRET, contentKeys[0]!, Buffer.from(contentKeys[0]!, 'base64').toString('hex')];
  for (const i of [home, dr]) {
    const ledger = JSON.stringify((await i.call('GET', '/v1/ledger?limit=2000')).body);
    const columns = await (await import('../helpers/keychain.ts')).everyColumn(i);
    const answers = i.answers.filter((a) => !a.includes(siteSecret) || i !== home).join('\n');
    for (const s of secrets) {
      t.false(i.logs.join('\n').includes(s), `${i.name}: a secret in the log`);
      t.false(answers.includes(s), `${i.name}: a secret in an answer`);
      t.false(columns.includes(s), `${i.name}: a secret in a database column`);
      t.false(ledger.includes(s), `${i.name}: a secret in the ledger`);
    }
    t.false(i.logs.join('\n').includes(siteSecret), `${i.name}: the site key in the log`);
    t.false(columns.includes(siteSecret), `${i.name}: the site key in a column`);
  }
  t.is(home.answers.filter((a) => a.includes(siteSecret)).length, 1, 'the site key is in one answer: the one that created it');
});

test('a take-over where the old home is still reached is refused by the installs that reach it, and recorded; the split install leaves and pairs again', async (t) => {
  const c = clock();
  const [prod, dr, region] = await Promise.all([
    startInstall(t, 'prod', { clock: c }),
    startInstall(t, 'dr', { clock: c }),
    startInstall(t, 'region', { clock: c }),
  ]);
  await pair(t, prod, dr, region);
  await prod.call('PUT', '/v1/policy', POLICY);
  await prod.call('POST', '/v1/keychain/scope', { parts: ['policy'] });
  await dr.call('POST', '/v1/keychain/sync');
  // DR loses its way to production (a cut link); the region still reaches it.
  const state = await dr.app.db('keychain_state').first();
  await dr.app.db('keychain_state').update({ home: JSON.stringify({ ...JSON.parse(state.home), address: 'http://127.0.0.1:9' }) });
  for (let minute = 0; minute < 16; minute++) {
    c.advance(60_000);
    await region.call('POST', '/v1/keychain/sync');
  }
  await dr.call('POST', '/v1/keychain/sync');
  const took = await dr.call('POST', '/v1/keychain/home', { take_over: true });
  t.is(took.status, 200, 'DR may take over: it has not reached its home for 15 minutes');
  // Neither the region (which reached production a minute ago) nor production (which the region polls) follows it.
  t.like((await region.call('GET', '/v1/keychain')).body, { role: 'member', epoch: 0, home: { install: 'prod' } });
  t.like((await prod.call('GET', '/v1/keychain')).body, { role: 'home', epoch: 0 });
  t.regex(
    (await events(region, 'config.keychain_take_over_refused'))[0]!.reason,
    /dr says it took over as the home, but this install reached its home \(prod\)/,
  );
  // The cut link keeps the notice from production; handed over another way, it is refused there too.
  const notice = JSON.parse((await dr.app.db('keychain_state').first()).notice);
  const handed = await prod.call('POST', '/v1/keychain/peer/take-over', notice, null);
  t.like(handed, { status: 409, body: { error: 'keychain_home_alive' } });
  t.regex((await events(prod, 'config.keychain_take_over_refused'))[0]!.reason, /region polled it within 3 minutes/);
  c.advance(30_000);
  await dr.app.keychain.tick();
  t.is((await events(region, 'config.keychain_take_over_refused')).length, 1, 'a notice refused again is recorded once');
  t.deepEqual((await dr.call('GET', '/v1/keychain')).body.members.map((m: { install: string }) => m.install).sort(), ['prod', 'region']);
  // The way back: DR leaves its split keychain; production removes it and pairs it again.
  const left = await dr.call('DELETE', '/v1/keychain');
  t.like(left, { status: 200, body: { role: 'none' } });
  t.like((await events(dr, 'config.keychain_left'))[0], { actor: 'admin-token', data: { role: 'home', epoch: 1 } });
  t.is((await dr.call('GET', '/v1/policy')).body.default_autonomy, 'off', 'it keeps the settings it has');
  await prod.call('DELETE', '/v1/keychain/members/dr');
  await pair(t, prod, dr);
  t.like((await dr.call('GET', '/v1/keychain')).body, { role: 'member', home: { install: 'prod' } });
  for (const i of [prod, dr, region]) t.true((await i.call('GET', '/v1/ledger/verify')).body.ok, i.name);
});

test('two syncs at once on a member apply each version once', async (t) => {
  const c = clock();
  const [home, dr] = await Promise.all([startInstall(t, 'prod', { clock: c }), startInstall(t, 'dr', { clock: c })]);
  await pair(t, home, dr);
  await home.call('PUT', '/v1/policy', POLICY);
  await home.call('PUT', '/v1/settings/mail', { smtp_host: 'relay.prod.bank.example', smtp_password: SMTP_SECRET });
  await home.call('POST', '/v1/keychain/scope', { parts: ['policy', 'mail'] });
  const both = await Promise.all([dr.call('POST', '/v1/keychain/sync'), dr.call('POST', '/v1/keychain/sync'), dr.app.keychain.tick()]);
  t.true(both.slice(0, 2).every((r) => r !== undefined && r.status === 200));
  t.deepEqual(
    (await events(dr, 'config.keychain_applied')).map((e) => [e.data.part, e.data.version]),
    [
      ['policy', 1],
      ['mail', 1],
    ],
  );
  t.is((await events(dr, 'config.policy_changed')).length, 1);
  t.true((await dr.call('GET', '/v1/ledger/verify')).body.ok);
});
