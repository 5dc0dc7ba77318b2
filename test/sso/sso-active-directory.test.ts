import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { testNeeding } from '../../host/plugins/testkit-needs.ts';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { AD_USERS, BIG, OU, READER, sambaMissing, startSamba, type RunningSamba } from '../helpers/samba.ts';
import { ldapSignIn, ledgerOf } from '../helpers/sso.ts';

/**
 * Directory sign-in, discovery and sync against Debian's Samba Active Directory domain
 * controller (samba-tool domain provision), run in a network namespace of the test's own:
 * sAMAccountName, userPrincipalName and DOMAIN\name, memberOf, a disabled account
 * (userAccountControl), nested groups, and a group of 1,600 members read through ranged
 * `member;range=` results. One domain controller for the file; each test its own service.
 */
type Context = { dc: RunningSamba | null };
const test = anyTest as TestFn<Context>;

test.before(async (t) => {
  t.timeout(300_000);
  t.context.dc = sambaMissing === null ? await startSamba() : null;
});

test.after.always(async (t) => {
  await t.context.dc?.stop();
});

/** A test that needs the domain controller (skipped with the reason without it; failed under CI=true). */
function adTest(title: string, fn: (t: ExecutionContext<Context>, dc: RunningSamba) => Promise<void>): void {
  testNeeding(test, sambaMissing, title, (t) => fn(t, t.context.dc!));
}

const pw = (sam: string): string => AD_USERS.find((u) => u.sam === sam)!.password!;

async function operating(t: ExecutionContext<Context>): Promise<TestApp> {
  t.timeout(180_000);
  const ta = await startApp(t, { manualTick: true, env: { SERVICE_DISCOVER_TIMEOUT_S: '60' } });
  await makeOperating(ta);
  return ta;
}

/** Discovery's findings saved, with the mappings given. */
async function configure(ta: TestApp, dc: RunningSamba, mappings: unknown[]): Promise<void> {
  const found = await ta.call('POST', '/v1/settings/sso/discover', {
    body: { addresses: [dc.ldaps, dc.ldap], bind_dn: READER.dn, bind_password: READER.password, fingerprint: dc.fingerprint },
  });
  if (found.body.ok !== true) throw new Error(JSON.stringify(found.body));
  const saved = await ta.call('PUT', '/v1/settings/sso', { body: { ldap: { ...found.body.found, bind_password: READER.password }, mappings } });
  if (saved.status !== 200) throw new Error(JSON.stringify(saved.body));
}

adTest(
  'discovery reads the root entry of an Active Directory: its kind, base, domains, memberOf, paging and domain controllers; an unknown certificate first',
  async (t, dc) => {
    const ta = await operating(t);
    const untrusted = await ta.call('POST', '/v1/settings/sso/discover', {
      body: { addresses: [dc.ldaps], bind_dn: READER.dn, bind_password: READER.password },
    });
    t.like(untrusted.body, { ok: false, problem: 'untrusted_certificate', certificate: { fingerprint: dc.fingerprint } });
    const found = await ta.call('POST', '/v1/settings/sso/discover', {
      body: { addresses: [dc.ldaps, dc.ldap], bind_dn: READER.dn, bind_password: READER.password, fingerprint: dc.fingerprint },
    });
    t.true(found.body.ok, JSON.stringify(found.body));
    t.like(found.body.found, {
      kind: 'active_directory',
      base_dn: 'DC=bank,DC=example',
      domain: 'bank.example',
      netbios: 'BANK',
      membership: 'memberOf',
      email_attribute: 'mail',
      name_attribute: 'displayName',
      disabled_filter: '(userAccountControl:1.2.840.113556.1.4.803:=2)',
    });
    t.true(found.body.found.login_attributes.includes('sAMAccountName'));
    t.true(found.body.found.login_attributes.includes('userPrincipalName'));
    t.true(found.body.paging);
    t.true(found.body.failover.length >= 1, 'the domain controllers of the domain');
    t.regex(found.body.vendor, /Samba/);
    t.true(found.body.people >= BIG + AD_USERS.length);
  },
);

adTest(
  'sign-in by sAMAccountName, userPrincipalName and DOMAIN\\name is one person; memberOf and nesting give the role; a disabled account is refused',
  async (t, dc) => {
    const ta = await operating(t);
    await configure(ta, dc, [
      { group: 'OnCall Owners', role: 'owner' },
      { group: `CN=OnCall Admins,${OU}`, role: 'admin', teams: ['payments'] },
    ]);
    for (const name of ['ada', 'ada@bank.example', 'BANK\\ada', 'bank\\ADA']) {
      const r = await ldapSignIn(ta, name, pw('ada'));
      t.is(r.status, 200, `${name}: ${JSON.stringify(r.body)}`);
      t.like(r.body.user, { email: 'ada@bank.example', name: 'Ada Lovelace', role: 'owner' });
    }
    // grace is in Payments Team, which is in OnCall Admins.
    t.like((await ldapSignIn(ta, 'BANK\\grace', pw('grace'))).body.user, { role: 'admin', teams: ['payments'] });
    t.is((await ldapSignIn(ta, 'linus', pw('linus'))).status, 401);
    t.is((await ldapSignIn(ta, 'ada', 'Wrong-Pa55word!')).status, 401);
    t.is((await ldapSignIn(ta, 'OTHER\\ada', pw('ada'))).status, 401);
    t.deepEqual(
      (await ledgerOf(ta, 'identity.directory_password_wrong')).map((e) => e.data.why),
      ['disabled', 'wrong_password', 'bad_name'],
    );
  },
);

adTest(
  'a group of 1,600 members, mapped by its objectGUID from the group search, is read to the end through ranged results; sync adds them all',
  async (t, dc) => {
    const ta = await operating(t);
    await configure(ta, dc, []);
    const groups = await ta.call('GET', '/v1/settings/sso/groups?q=Staff');
    t.is(groups.status, 200, JSON.stringify(groups.body));
    const staff = groups.body.groups.find((g: { name: string }) => g.name === 'AllStaff');
    t.truthy(staff, JSON.stringify(groups.body));
    const guid = staff.ids.find((id: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-/.test(id));
    t.truthy(guid);
    const settings = (await ta.call('GET', '/v1/settings/sso')).body;
    t.is((await ta.call('PUT', '/v1/settings/sso', { body: { ...settings, mappings: [{ group: guid, role: 'viewer', tags: ['staff'] }] } })).status, 200);
    const test = await ta.call('POST', '/v1/settings/sso/test');
    t.like(test.body.ldap, { ok: true, tls: 'ldaps', mappings: [{ group: guid, found: true }] });
    const sync = await ta.call('POST', '/v1/settings/sso/sync');
    t.is(sync.status, 200, JSON.stringify(sync.body).slice(0, 500));
    t.true(sync.body.ok, String(sync.body.reason));
    t.is(sync.body.members, BIG);
    t.is(sync.body.added.length, BIG);
    t.true(sync.body.added.includes('u1600@bank.example'), 'the last member, past the first range of 1,500');
    const people = (await ta.call('GET', '/v1/people')).body.people;
    t.is(people.length, BIG + 1);
    t.like(
      people.find((p: { email: string }) => p.email === 'u1555@bank.example'),
      { role: 'viewer', tags: ['staff'], directory: true },
    );
    t.is((await ledgerOf(ta, 'identity.directory_synced')).length, 1);
  },
);
