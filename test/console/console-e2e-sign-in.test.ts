import test, { type ExecutionContext } from 'ava';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { browserAs, browserTest, closeBrowser, consoleBuilt, heading, openPage, visited } from '../helpers/browser.ts';
import { CLIENT_ID, CLIENT_SECRET, startProvider, type TestProvider } from '../helpers/oidc.ts';
import { breakGlass } from '../helpers/people.ts';
import { passwordOf, READER_DN, READER_PASSWORD, slapdMissing, startSlapd, type RunningSlapd } from '../helpers/slapd.ts';
import { ldapSettings, MAPPINGS } from '../helpers/sso.ts';

/*
 * The console's sign-in page with single sign-on and directory sign-in, and Settings → Sign-in,
 * in Debian's Chromium against the whole service, npm's oidc-provider and Debian's slapd. Each
 * page visited is saved as a screenshot under test/artifacts/ and checked with axe-core.
 */

test.after.always(closeBrowser);

async function setUp(t: ExecutionContext): Promise<{ ta: TestApp; idp: TestProvider; slapd: RunningSlapd }> {
  t.timeout(120_000);
  await consoleBuilt();
  const slapd = await startSlapd(t);
  const ta = await startApp(t);
  await makeOperating(ta);
  const idp = await startProvider(t, `${ta.base}/v1/auth/sso/callback`, {
    ada: { email: 'ada@bank.example', name: 'Ada Lovelace', groups: ['oncall-owners'] },
    nobody: { email: 'nobody@bank.example', name: 'No Groups', groups: [] },
  });
  const saved = await ta.call('PUT', '/v1/settings/sso', {
    body: {
      console_address: ta.base,
      label: 'Sign in with Bank ID',
      oidc: { issuer: idp.issuer, client_id: CLIENT_ID, client_secret: CLIENT_SECRET },
      ldap: ldapSettings(slapd),
      mappings: MAPPINGS,
    },
  });
  if (saved.status !== 200) throw new Error(JSON.stringify(saved.body));
  return { ta, idp, slapd };
}

browserTest('sign-in page: single sign-on through the provider goes back to the page the person asked for; a refusal says why', async (t) => {
  if (slapdMissing !== null) return t.fail(slapdMissing);
  const { ta, idp } = await setUp(t);
  const bp = await openPage(t);
  await bp.page.goto(`${ta.base}/incidents`);
  await heading(bp, 'Sign in').waitFor();
  await bp.page.getByRole('button', { name: 'Sign in with Bank ID' }).waitFor();
  await bp.page.getByLabel('Directory account (your network password)').waitFor();
  await visited(t, bp, 'sign-in-sso-and-directory');

  idp.next = 'ada';
  await bp.page.getByRole('button', { name: 'Sign in with Bank ID' }).click();
  await heading(bp, 'Incidents').waitFor();
  t.is(new URL(bp.page.url()).pathname, '/incidents', 'back where the person was');
  t.false(bp.page.url().includes('sso='), 'the ticket is not left in the address');
  t.deepEqual(bp.problems, []);

  // Someone in no mapped group comes back refused, and is told why.
  const other = await openPage(t);
  idp.next = 'nobody';
  await other.page.goto(`${ta.base}/sign-in`);
  await other.page.getByRole('button', { name: 'Sign in with Bank ID' }).click();
  await other.page.getByText('You are not in a group that may use this service').waitFor();
  await visited(t, other, 'sign-in-sso-refused');
});

browserTest('sign-in page: a directory password signs in; a wrong one gets the one answer', async (t) => {
  if (slapdMissing !== null) return t.fail(slapdMissing);
  const { ta } = await setUp(t);
  const bp = await openPage(t);
  await bp.page.goto(`${ta.base}/people`);
  await heading(bp, 'Sign in').waitFor();
  await bp.page.getByLabel('User name').fill('BANK\\grace');
  await bp.page.getByRole('textbox', { name: 'Password' }).fill('wrong');
  await bp.page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await bp.page.getByRole('alert').filter({ hasText: 'name or password is wrong' }).waitFor();
  await bp.page.getByRole('textbox', { name: 'Password' }).fill(passwordOf('grace'));
  await bp.page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await heading(bp, 'People').waitFor();
  await bp.page.getByText('through the directory or single sign-on').first().waitFor();
  await visited(t, bp, 'people-directory-person');
});

browserTest(
  'Settings → Sign-in: discovery shows an unknown certificate to trust, finds the directory, maps a group found by search, syncs and shows who was added',
  async (t) => {
    if (slapdMissing !== null) return t.fail(slapdMissing);
    t.timeout(120_000);
    await consoleBuilt();
    const slapd = await startSlapd(t);
    // No real-time tick: a directory with no sync yet is due at once, and a scheduled sync run
    // between saving the mapping and "Sync now" would add the person first (seen on MariaDB).
    const ta = await startApp(t, { manualTick: true });
    await makeOperating(ta);
    const bp = await browserAs(t, ta.base, await breakGlass(ta));
    await bp.page.goto(`${ta.base}/settings`);
    await bp.page.getByRole('link', { name: /Sign-in: single sign-on/ }).click();
    await heading(bp, 'Sign-in settings').waitFor();
    await bp.page.getByLabel('Directory passwords and the sync').check();
    await bp.page.getByLabel('Addresses (one a line, tried in order)').fill(slapd.ldaps);
    await bp.page.getByLabel("The service's read-only account (DN)").fill(READER_DN);
    await bp.page.getByLabel('Its password').fill(READER_PASSWORD);
    await bp.page.getByRole('button', { name: 'Discover' }).click();
    await bp.page.getByText("The directory's certificate is not trusted").waitFor();
    await bp.page.getByText(slapd.fingerprint).waitFor();
    await visited(t, bp, 'settings-sign-in-untrusted-certificate');

    await bp.page.getByRole('button', { name: 'Trust exactly this certificate' }).click();
    await bp.page.getByText(/Found an OpenLDAP directory: 128 people/).waitFor();
    await bp.page.getByRole('button', { name: 'Save', exact: true }).click();
    await bp.page.getByText('Saved.').waitFor();
    await bp.page.getByLabel("Part of a group's name").fill('oncall');
    await bp.page.getByRole('button', { name: 'Search' }).click();
    await bp.page.getByRole('listitem').filter({ hasText: 'oncall-owners' }).getByRole('button', { name: 'Map it' }).click();
    await bp.page.getByRole('row').last().getByLabel('Role').selectOption('owner');
    await bp.page.getByRole('button', { name: 'Save', exact: true }).click();
    await bp.page.getByText('Saved.').waitFor();
    await bp.page.getByRole('button', { name: 'Sync now' }).click();
    await bp.page.getByText('Synced.').waitFor();
    await bp.page.getByRole('definition').filter({ hasText: 'ada@bank.example' }).waitFor();
    await visited(t, bp, 'settings-sign-in-synced');
    const saved = (await ta.call('GET', '/v1/settings/sso')).body;
    t.like(saved, { mode: 'ldap', ldap: { fingerprint: slapd.fingerprint, kind: 'openldap', bind_password_set: true } });
    t.deepEqual(saved.mappings, [{ group: 'cn=oncall-owners,ou=groups,dc=bank,dc=example', role: 'owner', teams: [], tags: [] }]);
    t.deepEqual(saved.last_sync.added, ['ada@bank.example']);
    t.false((await bp.page.content()).includes(READER_PASSWORD));
    t.deepEqual(bp.problems, []);
  },
);
