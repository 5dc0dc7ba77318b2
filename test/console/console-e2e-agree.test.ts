import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { makeOperating, startApp } from '../helpers/app.ts';
import { browserAs, browserTest, closeBrowser, consoleBuilt, heading, visited } from '../helpers/browser.ts';
import { breakGlass, signedIn } from '../helpers/people.ts';
import { startSmtp } from '../helpers/smtp.ts';

/*
 * Issue 22, item 13: the console agrees with itself. The halt banner and the Home page's card
 * show one state as it changes; the Estate page shows a build that ended without a reload; after
 * the first test e-mail signs the break-glass owner out, sign-in offers the code, not a password
 * an owner cannot have; Settings → Mail starts at SMTP like the first-start form.
 */

test.after.always(closeBrowser);

browserTest('the halt banner and the Home card say the same as the switch moves, without a reload', async (t) => {
  await consoleBuilt();
  const ta = await startApp(t);
  await makeOperating(ta);
  const bp = await browserAs(t, ta.base, await signedIn(ta, 'alice@bank.example', 'admin'));
  const { page } = bp;
  const banner = page.getByRole('region', { name: 'Halt switch' });
  const card = page.getByTestId('halt-state');

  await page.goto(ta.base + '/');
  await heading(bp, 'Home').waitFor();
  await card.filter({ hasText: 'Not halted' }).waitFor();
  await banner.getByRole('status').filter({ hasText: 'Running' }).waitFor();

  // Someone else halts (the API, as another console would): both follow.
  t.is((await ta.call('POST', '/v1/halt', { body: { by: 'bob@bank.example', reason: 'bad deploy' } })).status, 200);
  await banner.getByText('HALTED: no action runs until someone resumes.').waitFor();
  await card.filter({ hasText: 'Halted' }).waitFor();
  t.is(await card.innerText(), 'Halted: no action runs. Halted by bob@bank.example. Reason: bad deploy');
  await visited(t, bp, 'e2e-agree-1-halted');

  // Resumed from the banner on this page: the card follows at once.
  await banner.getByRole('button', { name: 'Resume actions' }).click();
  await card.filter({ hasText: 'Not halted' }).waitFor();
  await banner.getByRole('status').filter({ hasText: 'Resumed' }).waitFor();
  t.is(await banner.getByText('HALTED: no action runs until someone resumes.').count(), 0);
  await visited(t, bp, 'e2e-agree-2-resumed');
  t.deepEqual(bp.problems, []);
});

browserTest('the Estate page shows the build it started once it ends, without a reload', async (t) => {
  await consoleBuilt();
  const ta = await startApp(t);
  await makeOperating(ta);
  // A Prometheus that takes its time: the build outlasts the click's own answer (202 with the job).
  const slow = createServer((req, res) => {
    req.resume();
    setTimeout(() => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ status: 'success', data: req.url?.includes('targets') ? { activeTargets: [], droppedTargets: [] } : [] }));
    }, 1500);
  });
  await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (slow.closeAllConnections(), slow.close(() => resolve()))));
  const prom = await ta.call('PUT', '/v1/connectors/prom', {
    body: { kind: 'prometheus', settings: { url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}` } },
  });
  t.is(prom.status, 201, JSON.stringify(prom.body));
  const bp = await browserAs(t, ta.base, await signedIn(ta, 'alice@bank.example', 'admin'));
  const { page } = bp;
  await page.goto(ta.base + '/estate');
  await heading(bp, 'Estate').waitFor();
  const built = page.getByText(/last built/);
  await built.filter({ hasText: 'last built never' }).waitFor();
  await page.getByRole('button', { name: 'Build the estate now' }).click();
  await page.getByText('Build started').waitFor();
  t.regex(await built.innerText(), /last built never/, 'the build is still running');
  await ta.app.discovery.idle();
  await built.filter({ hasNotText: 'never' }).waitFor();
  t.notRegex(await built.innerText(), /last built never/);
  t.is((await ta.call('GET', '/v1/estate')).body.built_at === null, false);
  await visited(t, bp, 'e2e-agree-3-estate-built');
  t.deepEqual(bp.problems, []);
});

browserTest('the first test e-mail signs the break-glass owner out; sign-in then offers the e-mailed code, not a password; Mail starts at SMTP', async (t) => {
  await consoleBuilt();
  const smtp = await startSmtp(t);
  const ta = await startApp(t, { env: { SERVICE_MAIL_CA_FILE: smtp.caFile } });
  await makeOperating(ta, 'owner@bank.example');
  const bp = await browserAs(t, ta.base, await breakGlass(ta));
  const { page } = bp;

  // No mail yet: Settings → Mail starts at SMTP, as the first-start form does.
  await page.goto(ta.base + '/settings');
  await heading(bp, 'Settings').waitFor();
  const provider = page.getByLabel('Provider');
  await provider.waitFor();
  t.is(await provider.inputValue(), 'smtp');
  await page.getByLabel('SMTP host').waitFor();
  await visited(t, bp, 'e2e-agree-4-mail-default');

  // The owner sets the relay and sends the test e-mail: it works, break-glass closes and signs them out.
  await page.getByLabel('SMTP host').fill(smtp.host);
  await page.getByLabel('SMTP port').fill(String(smtp.port));
  await page.getByLabel('Sender address').fill('oncall@bank.example');
  await page.getByRole('button', { name: 'Save mail settings' }).click();
  await page.getByText(/^✓ Saved\./).waitFor();
  await page.getByLabel('Send a test e-mail to').fill('owner@bank.example');
  await page.getByRole('button', { name: 'Send test e-mail' }).click();
  await heading(bp, 'Sign in').waitFor();
  t.is(smtp.messages.length, 1);
  // Codes work now: the code is offered first; the owner has no password to use.
  await page.getByLabel('E-mailed code').waitFor();
  await page.waitForFunction(() => (globalThis as any).document.querySelector('input[value="code"]')?.checked === true);
  t.true(await page.getByLabel('E-mailed code').isChecked());
  t.false(await page.getByLabel('Password').isChecked());
  await page.getByLabel('E-mail address').waitFor();
  await visited(t, bp, 'e2e-agree-5-sign-in-after-test');
  t.deepEqual(bp.problems, []);
});
