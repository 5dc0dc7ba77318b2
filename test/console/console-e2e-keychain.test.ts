import test from 'ava';
import { MINUTE, TestClock } from '../../host/clock.ts';
import { browserAs, browserTest, closeBrowser, consoleBuilt, heading, visited } from '../helpers/browser.ts';
import { ADMIN_TOKEN, startInstall, type Install } from '../helpers/keychain.ts';

/*
 * The Keychain page in a real browser (Debian's Chromium through playwright-core) against two
 * installs on one clock: making the home, a site key shown once, joining from the other install,
 * the members with their state, the scope and an own value on the home; on the member its home,
 * what it carries and from which version, the take-over once the home is lost, and the old home
 * saying it is a member when it comes back. Each view is
 * saved as a screenshot under test/artifacts/ and checked with axe-core.
 */

test.after.always(closeBrowser);

/** A break-glass session of the admin token (owner rights: no mail is set up on these installs). */
async function owner(i: Install): Promise<string> {
  const r = await i.call('POST', '/v1/login', { token: ADMIN_TOKEN }, null);
  if (r.status !== 200 || r.body.break_glass !== true) throw new Error(`break-glass on ${i.name}: ${JSON.stringify(r.body)}`);
  return r.body.token as string;
}

browserTest(
  'the Keychain page: the home makes a site key, the member joins, the scope and an own value are set, and the member takes over when the home is lost',
  async (t) => {
    t.timeout(180_000);
    await consoleBuilt();
    const clock = new TestClock('2026-06-01T08:00:00.000Z');
    const [prod, dr] = await Promise.all([startInstall(t, 'prod', { clock }), startInstall(t, 'dr', { clock })]);

    // The home.
    const home = await browserAs(t, prod.base, await owner(prod));
    const hp = home.page;
    await hp.goto(`${prod.base}/keychain`);
    await heading(home, 'Keychain').waitFor();
    await hp.getByText('This install is in no keychain').waitFor();
    await visited(t, home, 'keychain-none');
    await hp.getByLabel('Name of this install in the keychain (optional)').first().fill('prod');
    await hp.getByRole('button', { name: 'Make this install the home' }).click();
    await hp.getByRole('heading', { name: 'This install is the home' }).waitFor();
    await hp.getByRole('button', { name: 'Create a site key' }).click();
    const siteKey = await hp.getByLabel(/^Site key [0-9a-f]{8}$/).inputValue();
    t.regex(siteKey, /^kc1\./);
    await visited(t, home, 'keychain-site-key');

    // The member joins in its own console.
    const member = await browserAs(t, dr.base, await owner(dr));
    const mp = member.page;
    await mp.goto(`${dr.base}/keychain`);
    await mp.getByLabel('The home’s address').fill(prod.base);
    await mp.getByLabel('Site key').fill(siteKey);
    await mp.getByLabel('Name of this install in the keychain (optional)').last().fill('dr');
    await mp.getByLabel(/This install’s address/).fill(dr.base);
    await mp.getByRole('button', { name: 'Join' }).click();
    await mp.getByRole('heading', { name: 'This install is a member' }).waitFor();
    t.true(await mp.getByText(/Home.*prod/).isVisible());

    // Back on the home: the member is listed; the scope and an own value are set.
    await hp.getByRole('button', { name: 'Done: hide it' }).click();
    await hp.reload();
    await hp.getByRole('row', { name: /dr/ }).getByText('active').waitFor();
    await hp.getByRole('checkbox', { name: 'Connectors' }).check();
    await hp.getByRole('checkbox', { name: 'Policy', exact: true }).check();
    await hp.getByRole('checkbox', { name: 'Mail' }).check();
    await hp.getByRole('button', { name: 'Save scope' }).click();
    await hp.getByText('Scope saved').waitFor();
    await hp.getByRole('checkbox', { name: 'own mail' }).check();
    await hp.getByText('dr keeps its own mail').waitFor();
    t.deepEqual((await prod.call('GET', '/v1/keychain')).body.own, [{ install: 'dr', part: 'mail' }]);
    await visited(t, home, 'keychain-home');

    // The member: what it carries and from which version.
    await mp.getByRole('button', { name: 'Sync now' }).click();
    await mp.getByText('✓ Synced.').waitFor();
    const policyRow = mp.getByRole('row', { name: /^Policy/ });
    t.regex(await policyRow.innerText(), /yes\s+version 1/);
    t.regex(await mp.getByRole('row', { name: /^Mail/ }).innerText(), /its own value/);
    t.true(await mp.getByText(/Allowed once the home has not been reached for 15 minutes/).isVisible());
    await visited(t, member, 'keychain-member');

    // The home is lost: after 15 minutes the member's owner may take over.
    await prod.stop();
    clock.advance(16 * MINUTE);
    await mp.getByRole('button', { name: 'Sync now' }).click();
    await mp.getByText('The home is not reached').waitFor();
    await mp.reload();
    const take = mp.getByRole('button', { name: 'Take over as the home' });
    await take.waitFor();
    t.true(await take.isDisabled(), 'not before the owner confirms');
    await mp.getByRole('checkbox', { name: /really lost/ }).check();
    await visited(t, member, 'keychain-take-over');
    await take.click();
    await mp.getByRole('heading', { name: 'This install is the home' }).waitFor();
    t.like((await dr.call('GET', '/v1/keychain')).body, { role: 'home', epoch: 1 });

    // The old home comes back and says, on its own Keychain page, that it is a member now.
    const back = await prod.restart();
    clock.advance(30_000);
    await dr.app.keychain.tick();
    await hp.reload();
    await hp.getByRole('heading', { name: 'This install is a member' }).waitFor();
    t.regex(await hp.getByRole('alert').filter({ hasText: 'was the home until' }).innerText(), /dr .* took over while it could not be reached/);
    t.is((await back.call('GET', '/v1/keychain')).body.demoted.by.name, 'dr');
    await visited(t, home, 'keychain-demoted');
    t.deepEqual([...home.problems, ...member.problems], []);
  },
);
