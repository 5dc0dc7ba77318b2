import type { ExecutionContext } from 'ava';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { testNeeding } from '../helpers/needs.ts';
import { closedPort } from '../helpers/ports.ts';
import { configureDirectory, ldapSettings, ldapSignIn, ledgerOf, MAPPINGS } from '../helpers/sso.ts';
import { FILLERS, groupDn, passwordOf, personDn, READER_DN, READER_PASSWORD, slapdMissing, startSlapd, SUFFIX, type RunningSlapd } from '../helpers/slapd.ts';

/**
 * Directory sign-in, discovery and sync against Debian's OpenLDAP slapd on loopback, with a TLS
 * certificate the test makes (trusted only by its fingerprint), a size limit that needs paging,
 * nested groups nine deep, a memberUid group and a locked account. On SQLite and MariaDB.
 */

async function setUp(t: ExecutionContext): Promise<{ ta: TestApp; slapd: RunningSlapd }> {
  t.timeout(120_000);
  const slapd = await startSlapd(t);
  const ta = await startApp(t, { manualTick: true, env: { SERVICE_TRUSTED_PROXIES: '127.0.0.1,::1' } });
  await makeOperating(ta);
  return { ta, slapd };
}

const person = async (ta: TestApp, email: string) => (await ta.call('GET', '/v1/people')).body.people.find((p: { email: string }) => p.email === email);

testNeeding(
  slapdMissing,
  'discovery: the first address down, an unknown certificate shown with subject, issuer and SHA-256; with that fingerprint it works out the directory',
  async (t) => {
    const { ta, slapd } = await setUp(t);
    const down = `127.0.0.1:${await closedPort()}`;
    const first = await ta.call('POST', '/v1/settings/sso/discover', {
      body: { addresses: [down, slapd.ldaps], bind_dn: READER_DN, bind_password: READER_PASSWORD },
    });
    t.is(first.status, 200);
    t.like(first.body, {
      ok: false,
      problem: 'untrusted_certificate',
      certificate: { subject: 'CN=localhost', issuer: 'CN=localhost', fingerprint: slapd.fingerprint },
    });
    t.deepEqual(
      first.body.tried.map((a: { url: string; ok: boolean }) => [a.url, a.ok]),
      [
        [`ldaps://${down}`, false],
        [`ldap://${down}`, false],
        [slapd.ldaps, false],
      ],
    );
    // Nothing was saved by discovery.
    t.is((await ta.call('GET', '/v1/settings/sso')).body.ldap, null);

    const second = await ta.call('POST', '/v1/settings/sso/discover', {
      body: {
        addresses: [down, slapd.ldaps, slapd.ldap],
        bind_dn: READER_DN,
        bind_password: READER_PASSWORD,
        fingerprint: slapd.fingerprint.replace(/:/g, '').toLowerCase(),
      },
    });
    t.is(second.status, 200);
    t.true(second.body.ok, JSON.stringify(second.body));
    t.like(second.body.found, {
      kind: 'openldap',
      base_dn: SUFFIX,
      domain: 'bank.example',
      membership: 'member',
      email_attribute: 'mail',
      page_size: 500,
      size_limit: 50,
      fingerprint: slapd.fingerprint,
    });
    t.deepEqual(second.body.found.urls, [slapd.ldaps, slapd.ldap], 'every address that answered, in order, for failover');
    t.deepEqual(second.body.found.login_attributes, ['uid', 'mail', 'cn']);
    t.true(second.body.paging);
    t.is(second.body.people, 8 + FILLERS, 'paged past the size limit of 50');
    t.false(JSON.stringify(second.body).includes(READER_PASSWORD));

    const wrong = await ta.call('POST', '/v1/settings/sso/discover', {
      body: { addresses: [slapd.ldaps], bind_dn: READER_DN, bind_password: 'wrong', fingerprint: slapd.fingerprint },
    });
    t.like(wrong.body, { ok: false, problem: 'bind_refused' });
    const events = await ledgerOf(ta, 'config.sso_discovered');
    t.is(events.length, 3);
    t.false(JSON.stringify(events).includes(READER_PASSWORD));
  },
);

testNeeding(
  slapdMissing,
  'settings: the bind password is write-only, kept when blank, and needed again for another address; bad filters are 400',
  async (t) => {
    const { ta, slapd } = await setUp(t);
    const saved = await configureDirectory(ta, slapd);
    t.like(saved, { mode: 'ldap', mixed_mode: true, sync_minutes: 15, recheck_hours: 8, ldap: { bind_password_set: true, fingerprint: slapd.fingerprint } });
    t.false('bind_password' in saved.ldap);
    t.false(JSON.stringify(saved).includes(READER_PASSWORD));
    // A round trip of what GET answered keeps the secret.
    const again = await ta.call('PUT', '/v1/settings/sso', { body: (await ta.call('GET', '/v1/settings/sso')).body });
    t.is(again.status, 200, JSON.stringify(again.body));
    t.true(again.body.ldap.bind_password_set);
    // Another address without the password again: refused, nothing changed.
    const moved = await ta.call('PUT', '/v1/settings/sso', { body: { ldap: { ...ldapSettings(slapd), urls: ['ldaps://evil.example'], bind_password: '' } } });
    t.is(moved.status, 400);
    t.is(moved.body.error, 'secret_required');
    t.deepEqual((await ta.call('GET', '/v1/settings/sso')).body.ldap.urls, [slapd.ldaps, slapd.ldap]);
    const badFilter = await ta.call('PUT', '/v1/settings/sso', { body: { ldap: ldapSettings(slapd, { person_filter: '(objectClass=person' }) } });
    t.is(badFilter.status, 400);
    const plain = await ta.call('PUT', '/v1/settings/sso', { body: { ldap: ldapSettings(slapd, { urls: ['http://x.example'] }) } });
    t.is(plain.status, 400);
    t.like((await ta.call('GET', '/v1/status', { token: null })).body.auth.sso, { mode: 'ldap', label: 'Single sign-on', local: true });
    const events = await ledgerOf(ta, 'config.sso_saved');
    t.is(events.length, 1, 'a PUT that changes nothing records nothing');
    t.false(JSON.stringify(events).includes(READER_PASSWORD));
  },
);

testNeeding(
  slapdMissing,
  'directory sign-in: uid, address and name@domain find the same person; groups give role, teams and tags eight deep, the ninth ignored, memberUid counts; the first address down fails over',
  async (t) => {
    const { ta, slapd } = await setUp(t);
    // The first address is down: every sign-in fails over to the second.
    await configureDirectory(ta, slapd, { ldap: ldapSettings(slapd, { urls: [`ldaps://127.0.0.1:${await closedPort()}`, slapd.ldaps] }) });
    const ada = await ldapSignIn(ta, 'ada', passwordOf('ada'));
    t.is(ada.status, 200, JSON.stringify(ada.body));
    t.like(ada.body.user, { email: 'ada@bank.example', name: 'Ada Lovelace', role: 'owner' });
    const me = await ta.call('GET', '/v1/auth/me', { token: ada.body.token });
    t.like(me.body, { actor: 'ada@bank.example', role: 'owner' });
    t.is((await ldapSignIn(ta, 'ada@bank.example', passwordOf('ada'))).status, 200);
    t.is((await ldapSignIn(ta, 'BANK\\ada', passwordOf('ada'))).status, 200);

    const grace = await ldapSignIn(ta, 'grace', passwordOf('grace'));
    t.like(grace.body.user, { role: 'admin', teams: ['payments'], tags: ['pager'] });
    // deep is in nest1 … nest9: nest8 (8 deep) counts, nest9 (9 deep) does not.
    const deep = await ldapSignIn(ta, 'deep', passwordOf('deep'));
    t.like(deep.body.user, { role: 'viewer', teams: [], tags: ['nested'] });
    // deeper is in nest2 (nest9 is 8 deep from there): both count, the highest role wins.
    const deeper = await ldapSignIn(ta, 'deeper', passwordOf('deeper'));
    t.like(deeper.body.user, { role: 'admin', teams: ['too-deep'], tags: ['nested'] });
    // No mail attribute: the name at the directory's domain.
    t.like((await ldapSignIn(ta, 'nomail', passwordOf('nomail'))).body.user, { email: 'nomail@bank.example', role: 'admin' });
    const ken = await ldapSignIn(ta, 'ken', passwordOf('ken'));
    t.like(ken.body.user, { role: 'viewer', teams: ['ops'] });
    const p = await person(ta, 'ken@bank.example');
    t.like(p, { directory: true, enabled: true, suspended: null });

    // A directory person's role, teams and tags cannot be changed by hand; no password either.
    t.is((await ta.call('PATCH', '/v1/people/ken@bank.example', { body: { role: 'admin' } })).body.error, 'directory_managed');
    t.is((await ta.call('POST', '/v1/people/ken@bank.example/password', { body: {} })).body.error, 'password_not_allowed');

    const signedIn = await ledgerOf(ta, 'identity.signed_in');
    t.true(signedIn.some((e) => e.data.via === 'ldap' && e.data.email === 'ken@bank.example'));
    const added = await ledgerOf(ta, 'identity.person_added');
    t.true(added.some((e) => e.actor === 'directory' && e.data.email === 'ada@bank.example' && e.data.directory === true));
  },
);

testNeeding(slapdMissing, 'directory sign-in: every failure is the same 401 and one event saying why; the password is never stored or logged', async (t) => {
  const { ta, slapd } = await setUp(t);
  await configureDirectory(ta, slapd);
  const cases: Array<[string, string, string]> = [
    ['ada', 'wrong-password', 'wrong_password'],
    ['nobody', 'whatever-1', 'unknown_name'],
    ['linus', passwordOf('linus'), 'disabled'],
    ['outsider', passwordOf('outsider'), 'outside_policy'],
    ['p001', passwordOf('p001'), 'not_added'],
    ['OTHER\\ada', passwordOf('ada'), 'bad_name'],
  ];
  const answers = new Set<string>();
  for (const [name, pw, _why] of cases) {
    const r = await ldapSignIn(ta, name, pw);
    t.is(r.status, 401, name);
    answers.add(JSON.stringify(r.body));
  }
  t.is(answers.size, 1, 'one answer for every failure');
  const events = await ledgerOf(ta, 'identity.directory_password_wrong');
  t.deepEqual(
    events.map((e) => e.data.why),
    cases.map((c) => c[2]),
  );
  // Nothing half-made: nobody was added by the refused sign-ins.
  t.is((await ta.call('GET', '/v1/people')).body.people.length, 1);
  const everything = JSON.stringify(await ta.call('GET', '/v1/ledger?limit=2000')) + ta.logs.join('\n');
  for (const [, pw] of cases) t.false(everything.includes(pw), 'a password is in the ledger or the logs');
});

testNeeding(
  slapdMissing,
  'directory sign-in limits: 5 tries per name (any spelling) and 20 per client in 10 minutes, exactly, under concurrent requests, on the injected clock',
  async (t) => {
    const { ta, slapd } = await setUp(t);
    await configureDirectory(ta, slapd);
    // Twelve wrong tries for one name at once, each from its own client, in three spellings.
    const spellings = ['grace', 'grace@bank.example', 'BANK\\grace'];
    const wrong = await Promise.all(Array.from({ length: 12 }, (_, i) => ldapSignIn(ta, spellings[i % 3]!, 'wrong', `203.0.113.${i + 1}`)));
    t.true(wrong.every((r) => r.status === 401));
    const events = await ledgerOf(ta, 'identity.directory_password_wrong');
    t.is(events.filter((e) => e.data.why === 'wrong_password').length, 5, 'exactly five reached the directory');
    t.is(events.filter((e) => e.data.why === 'name_limited').length, 7);
    // The right password is refused too while the name is limited, with the same answer.
    const right = await ldapSignIn(ta, 'grace', passwordOf('grace'), '198.51.100.1');
    t.is(right.status, 401);
    ta.clock.advance(10 * 60_000 + 1000);
    t.is((await ldapSignIn(ta, 'grace', passwordOf('grace'), '198.51.100.1')).status, 200, 'ten minutes later it works');

    // 25 tries from one client at once (different names): exactly 20 are looked at, then 429.
    const burst = await Promise.all(Array.from({ length: 25 }, (_, i) => ldapSignIn(ta, `p${String(i + 1).padStart(3, '0')}`, 'wrong', '192.0.2.77')));
    const by = burst.reduce<Record<number, number>>((a, r) => ({ ...a, [r.status]: (a[r.status] ?? 0) + 1 }), {});
    t.deepEqual(by, { 401: 20, 429: 5 });
  },
);

testNeeding(
  slapdMissing,
  'sync: people of mapped groups are created and follow their groups; leaving every group suspends and ends sessions; returning restores',
  async (t) => {
    const { ta, slapd } = await setUp(t);
    await configureDirectory(ta, slapd);
    const graceSession = (await ldapSignIn(ta, 'grace', passwordOf('grace'))).body.token as string;
    const first = await ta.call('POST', '/v1/settings/sso/sync');
    t.is(first.status, 200, JSON.stringify(first.body));
    t.like(first.body, { ok: true, by: 'admin-token' });
    t.deepEqual(first.body.added.sort(), ['ada@bank.example', 'deep@bank.example', 'deeper@bank.example', 'ken@bank.example', 'nomail@bank.example']);
    t.like(first.body.skipped, { disabled: 1, outside_policy: ['outsider@elsewhere.example'], no_address: [] });
    t.like(await person(ta, 'deep@bank.example'), { role: 'viewer', tags: ['nested'], directory: true });

    // grace leaves oncall-admins; ken moves into oncall-owners.
    slapd.modify(
      `dn: ${groupDn('oncall-admins')}\nchangetype: modify\ndelete: member\nmember: ${personDn('grace')}\n\ndn: ${groupDn('oncall-owners')}\nchangetype: modify\nadd: member\nmember: ${personDn('ken')}\n`,
    );
    const second = (await ta.call('POST', '/v1/settings/sso/sync')).body;
    t.deepEqual(second.suspended, ['grace@bank.example']);
    t.deepEqual(
      second.changed.map((c: { email: string }) => c.email),
      ['ken@bank.example'],
    );
    t.like(await person(ta, 'grace@bank.example'), { enabled: false, suspended: 'directory' });
    t.like(await person(ta, 'ken@bank.example'), { role: 'owner', teams: ['ops'] });
    const ended = await ta.call('GET', '/v1/auth/me', { token: graceSession });
    t.is(ended.status, 401);
    t.regex(ended.body.message, /mapped group/);
    t.is((await ldapSignIn(ta, 'grace', passwordOf('grace'))).status, 401, 'a suspended person cannot sign in');

    slapd.modify(`dn: ${groupDn('oncall-admins')}\nchangetype: modify\nadd: member\nmember: ${personDn('grace')}\n`);
    const third = (await ta.call('POST', '/v1/settings/sso/sync')).body;
    t.deepEqual(third.restored, ['grace@bank.example']);
    t.like(await person(ta, 'grace@bank.example'), { enabled: true, suspended: null });
    t.is((await ldapSignIn(ta, 'grace', passwordOf('grace'))).status, 200);

    const synced = await ledgerOf(ta, 'identity.directory_synced');
    t.is(synced.length, 3);
    t.like(synced[1]!.data, { ok: true, suspended: ['grace@bank.example'] });
    t.is((await ta.call('GET', '/v1/settings/sso')).body.last_sync.restored[0], 'grace@bank.example');
  },
);

testNeeding(
  slapdMissing,
  'sync: the last enabled owner is never demoted or suspended by a group change; an unreachable directory is recorded and changes nobody',
  async (t) => {
    const { ta, slapd } = await setUp(t);
    await configureDirectory(ta, slapd);
    t.true((await ta.call('POST', '/v1/settings/sso/sync')).body.ok);
    // The bootstrap owner is disabled by hand: ada (a directory owner) is the last enabled owner.
    t.is((await ta.call('PATCH', '/v1/people/owner@bank.example', { body: { enabled: false } })).status, 200);
    // groupOfNames needs a member: the reader's entry, which is no person.
    slapd.modify(`dn: ${groupDn('oncall-owners')}\nchangetype: modify\nreplace: member\nmember: ${READER_DN}\n`);
    const kept = (await ta.call('POST', '/v1/settings/sso/sync')).body;
    t.deepEqual(kept.kept_last_owner, ['ada@bank.example']);
    t.deepEqual(kept.suspended, []);
    t.like(await person(ta, 'ada@bank.example'), { enabled: true, role: 'owner' });
    // In a mapped group with a lower role: still kept an owner.
    slapd.modify(`dn: ${groupDn('oncall-admins')}\nchangetype: modify\nadd: member\nmember: ${personDn('ada')}\n`);
    const stillKept = (await ta.call('POST', '/v1/settings/sso/sync')).body;
    t.deepEqual(stillKept.kept_last_owner, ['ada@bank.example']);
    t.like(await person(ta, 'ada@bank.example'), { enabled: true, role: 'owner' });

    // The directory goes away: the sync is recorded with the reason, and nobody changes.
    const before = (await ta.call('GET', '/v1/people')).body.people;
    const port = await closedPort();
    const settings = (await ta.call('GET', '/v1/settings/sso')).body;
    const moved = await ta.call('PUT', '/v1/settings/sso', {
      body: { ...settings, ldap: { ...settings.ldap, urls: [`ldaps://127.0.0.1:${port}`], bind_password: READER_PASSWORD } },
    });
    t.is(moved.status, 200);
    const failed = (await ta.call('POST', '/v1/settings/sso/sync')).body;
    t.like(failed, { ok: false });
    t.regex(failed.reason, /ECONNREFUSED/);
    t.deepEqual((await ta.call('GET', '/v1/people')).body.people, before);
    const last = (await ledgerOf(ta, 'identity.directory_synced')).at(-1)!;
    t.like(last.data, { ok: false });
    t.regex(last.reason, /nobody changed/);
  },
);

testNeeding(slapdMissing, 'sync every sync_minutes on the injected clock from the tick, once per interval', async (t) => {
  const { ta, slapd } = await setUp(t);
  await configureDirectory(ta, slapd, { sync_minutes: 30 });
  const count = async () => (await ledgerOf(ta, 'identity.directory_synced')).length;
  await ta.app.tick();
  await ta.app.sso.idle();
  t.is(await count(), 1, 'the first tick after saving syncs');
  ta.clock.advance(29 * 60_000);
  await ta.app.tick();
  await ta.app.sso.idle();
  t.is(await count(), 1);
  ta.clock.advance(60_000);
  await ta.app.tick();
  await ta.app.sso.idle();
  t.is(await count(), 2);
  t.is((await ledgerOf(ta, 'identity.directory_synced'))[1]!.actor, 'system');
});

testNeeding(
  slapdMissing,
  'mixed mode off needs a mapped owner group (409 would_lock_out_owners); then codes and passwords are off and their sessions end',
  async (t) => {
    const { ta, slapd } = await setUp(t);
    const viewer = await ta.call('POST', '/v1/people', { body: { email: 'hand@bank.example', name: 'Hand', role: 'viewer' } });
    t.is(viewer.status, 201);
    const pw = (await ta.call('POST', '/v1/people/hand@bank.example/password', { body: {} })).body.password as string;
    const session = (await ta.call('POST', '/v1/auth/password', { token: null, body: { email: 'hand@bank.example', password: pw } })).body.token as string;
    const noOwner = await ta.call('PUT', '/v1/settings/sso', {
      body: { ldap: ldapSettings(slapd), mappings: MAPPINGS.filter((m) => m.role !== 'owner'), mixed_mode: false },
    });
    t.is(noOwner.status, 409);
    t.is(noOwner.body.error, 'would_lock_out_owners');
    t.is((await ta.call('GET', '/v1/settings/sso')).body.ldap, null, 'nothing saved');
    await configureDirectory(ta, slapd, { mixed_mode: false });
    t.like((await ta.call('GET', '/v1/status', { token: null })).body.auth.sso, { mode: 'ldap', local: false });
    const me = await ta.call('GET', '/v1/auth/me', { token: session });
    t.is(me.status, 401);
    t.regex(me.body.message, /code or password is off/);
    t.is((await ta.call('POST', '/v1/auth/password', { token: null, body: { email: 'hand@bank.example', password: pw } })).status, 401);
    t.like((await ledgerOf(ta, 'config.sso_saved'))[0]!.data, { mixed_mode: false, sessions_ended: 1 });
    // The directory still signs people in.
    t.is((await ldapSignIn(ta, 'ada', passwordOf('ada'))).status, 200);
  },
);
