import test, { type ExecutionContext } from 'ava';
import { HOUR } from '../../host/clock.ts';
import { ADMIN_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { browserTest, closeBrowser, consoleBuilt, heading, openPage, visited } from '../helpers/browser.ts';
import { startSmtp, type TestSmtp } from '../helpers/smtp.ts';

/*
 * The console in a real browser (Debian's Chromium through playwright-core) against the whole
 * service: each test drives the pages as a person would, saves a screenshot under
 * test/artifacts/ and checks every page it visits with axe-core (no serious or critical
 * violation). See docs/console.md, "Tested in a real browser".
 */

const OWNER = 'owner@bank.example';

test.after.always(closeBrowser);

/** The service with its console, on a fresh data directory. */
async function service(t: ExecutionContext, env: Record<string, string> = {}): Promise<TestApp> {
  await consoleBuilt();
  return startApp(t, { env });
}

/** An operating install whose mail goes to the test's SMTP server (STARTTLS, its CA trusted). */
async function withMail(t: ExecutionContext): Promise<{ ta: TestApp; smtp: TestSmtp }> {
  const smtp = await startSmtp(t);
  const ta = await service(t, { SERVICE_MAIL_CA_FILE: smtp.caFile });
  await makeOperating(ta, OWNER);
  const put = await ta.call('PUT', '/v1/settings/mail', {
    body: { smtp_host: smtp.host, smtp_port: smtp.port, smtp_security: 'starttls', mail_from: 'oncall@bank.example' },
  });
  if (put.status !== 200) throw new Error(`mail settings: ${JSON.stringify(put.body)}`);
  return { ta, smtp };
}

/** The code in the newest message to `email`, once the sign-in service has sent it. */
async function mailedCode(ta: TestApp, smtp: TestSmtp, email: string, after: number): Promise<string> {
  await ta.app.signIn.idle();
  const mail = smtp.messages
    .slice(after)
    .reverse()
    .find((m) => m.to.includes(email));
  if (mail === undefined) throw new Error(`no code arrived for ${email}`);
  return /\b(\d{6})\b/.exec(mail.text)![1]!;
}

browserTest(
  'first start without mail: break-glass with one remembered "Your name", the halt banner, the owner on People, sign-in offers what works',
  async (t) => {
    const ta = await service(t);
    const bp = await openPage(t);
    const { page } = bp;

    // A fresh install: every page leads to /setup, which lists the three steps and counts them all.
    await page.goto(ta.base + '/');
    await heading(bp, 'Set up the service').waitFor();
    t.is(new URL(page.url()).pathname, '/setup');
    await page.getByRole('heading', { name: 'Progress: 0 of 3 done' }).waitFor();
    const steps = page.getByRole('listitem');
    t.regex(await steps.nth(0).innerText(), /Enter the admin token\s*\(to do\)/);
    t.is(await steps.filter({ hasText: '(to do)' }).count(), 3);
    await visited(t, bp, 'e2e-1-setup-start');

    // 1. The admin token: ticked, and counted at once.
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('button', { name: 'Start the trial' }).waitFor();
    t.regex(await steps.nth(0).innerText(), /Enter the admin token\s*\(done\)/);
    await page.getByRole('heading', { name: 'Progress: 1 of 3 done' }).waitFor();
    await visited(t, bp, 'e2e-1-setup-licence');

    // 2. The trial (no key needed).
    await page.getByRole('button', { name: 'Start the trial' }).click();
    await page.getByRole('heading', { name: 'First owner' }).waitFor();
    await page.getByRole('heading', { name: 'Progress: 2 of 3 done' }).waitFor();

    // 3. The first owner. Mail: an SMTP relay on the bank's network is the default choice.
    t.true(await page.getByLabel('SMTP relay (on your network)').isChecked());
    t.false(await page.getByLabel('Mail API (Resend, on the internet)').isChecked());
    await page.getByLabel('Relay host name or address').waitFor();
    t.is(await page.getByLabel('Port').inputValue(), '587');
    await visited(t, bp, 'e2e-1-setup-owner');
    await page.getByLabel("Owner's e-mail address").fill(OWNER);
    await page.getByLabel("Owner's name").fill('Olive Owner');
    await page.getByLabel('No mail for now').check();
    await page.getByText('Without mail, no sign-in code can be sent.').waitFor();
    t.is(await page.getByLabel('Relay host name or address').count(), 0);
    await page.getByRole('button', { name: 'Create the owner and sign in' }).click();
    await heading(bp, 'Home').waitFor();
    t.is(new URL(page.url()).pathname, '/');
    const who = page.getByText(/Signed in as/);
    await who.waitFor();
    t.regex(await who.innerText(), /admin-token.*role owner.*break-glass/s);
    const banner = page.getByRole('alert').filter({ hasText: 'Break-glass is open' });
    await banner.waitFor();
    t.regex(await banner.innerText(), /no mail is configured, so no sign-in code can be sent/);
    // One "Your name" on the page, in the banner; remembered for the tab.
    const yourName = page.getByLabel(/^Your name/);
    t.is(await yourName.count(), 1);
    await yourName.fill('Olive Owner');
    await visited(t, bp, 'e2e-1-home-break-glass');

    // Control: still one "Your name" (the halt switch and the autonomy forms share it), already filled.
    await page.getByRole('link', { name: 'Control', exact: true }).click();
    await heading(bp, 'Control').waitFor();
    t.is(await page.getByLabel(/Your name/).count(), 1);
    t.is(await page.getByLabel(/^Your name/).inputValue(), 'Olive Owner');
    await page.getByRole('button', { name: 'Halt…' }).click();
    await page.getByLabel('Reason for halting (required)').fill('change freeze for the audit');
    await page.getByRole('button', { name: 'Halt all actions' }).click();
    // Halted: a large banner, the first thing on the page, above the break-glass banner.
    const halted = page.getByText('HALTED: no action runs until someone resumes.');
    await halted.waitFor();
    const [haltBox, glassBox] = [await halted.boundingBox(), await banner.boundingBox()];
    t.true(haltBox !== null && glassBox !== null && haltBox.y < glassBox.y, 'the halt banner comes first');
    t.true((await halted.evaluate((el) => parseFloat((globalThis as any).getComputedStyle(el).fontSize as string))) >= 24, 'the halt banner is large');
    await page.getByText(/Halted by Olive Owner/).waitFor();
    await visited(t, bp, 'e2e-1-control-halted');
    const haltEvent = (await ta.call('GET', '/v1/ledger?type=governance.halted')).body.events[0];
    t.like(haltEvent, { actor: 'admin-token', data: { by: 'Olive Owner' } });

    // The banner is on every page; what the last click said is not.
    await page.getByRole('link', { name: 'Audit log' }).click();
    await heading(bp, 'Audit log').waitFor();
    await halted.waitFor();
    await page.getByRole('button', { name: 'Resume actions' }).click();
    await page.getByText('Resumed: actions may run again.').waitFor();
    await page.getByRole('link', { name: 'Incidents', exact: true }).click();
    await heading(bp, 'Incidents').waitFor();
    t.is(await page.getByText('Resumed: actions may run again.').count(), 0, 'the message stays on the page it was said on');
    t.is(await halted.count(), 0);
    t.like((await ta.call('GET', '/v1/ledger?type=governance.resumed')).body.events[0], { data: { by: 'Olive Owner' } });

    // People: what is true for the owner without mail, and no Disable on the only owner.
    await page.getByRole('link', { name: 'People' }).click();
    await heading(bp, 'People').waitFor();
    const card = page.getByRole('listitem').filter({ hasText: OWNER });
    await card.getByText(/Signs in:/).waitFor();
    t.regex(await card.innerText(), /no mail is configured, so no code can be sent; until mail works an owner signs in with the admin token/);
    t.notRegex(await card.innerText(), /signs in by e-mailed code/i);
    t.is(await page.getByRole('button', { name: /^Disable/ }).count(), 0);
    t.regex(await card.innerText(), /The only enabled owner/);
    await visited(t, bp, 'e2e-1-people');

    // Signed out, the sign-in page says codes cannot be sent and offers what works.
    await page.evaluate('sessionStorage.removeItem("oncall.session")');
    await page.goto(ta.base + '/sign-in');
    await heading(bp, 'Sign in').waitFor();
    await page.getByText('E-mailed codes cannot be sent:').waitFor();
    t.is(await page.getByLabel(/E-mailed code/).count(), 0);
    t.true(await page.getByLabel('Password').first().isChecked());
    await page.getByLabel('Admin token (break-glass)').waitFor();
    await visited(t, bp, 'e2e-1-sign-in-no-mail');

    const status = (await ta.call('GET', '/v1/status', { token: null })).body;
    t.like(status, { mode: 'operating', setup: { next: null }, auth: { break_glass: { open: true }, email_codes: 'off' } });
    t.deepEqual(bp.problems, []);
  },
);

browserTest('first start with an SMTP relay: the owner signs in with a code it delivered', async (t) => {
  const smtp = await startSmtp(t, { user: 'relay', password: 'relay-pass-77' });
  const ta = await service(t, { SERVICE_MAIL_CA_FILE: smtp.caFile });
  const bp = await openPage(t);
  const { page } = bp;
  await page.goto(ta.base + '/setup');
  await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByRole('button', { name: 'Start the trial' }).click();
  await page.getByRole('heading', { name: 'First owner' }).waitFor();
  await page.getByLabel("Owner's e-mail address").fill(OWNER);
  await page.getByLabel("Owner's name").fill('Olive Owner');
  await page.getByLabel('Relay host name or address').fill(smtp.host);
  await page.getByLabel('Port').fill(String(smtp.port));
  await page.getByLabel(/^User/).fill('relay');
  await page.getByLabel('Password').fill('relay-pass-77');
  await page.getByLabel('Sender address (optional)').fill('oncall@bank.example');
  await page.getByRole('button', { name: 'Create the owner and sign in' }).click();
  const codeBox = page.getByLabel('Six-digit code');
  await codeBox.waitFor();
  await page.getByText(`A code is being sent to ${OWNER}`).waitFor();
  await visited(t, bp, 'e2e-4-setup-code');
  await codeBox.fill(await mailedCode(ta, smtp, OWNER, 0));
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await heading(bp, 'Home').waitFor();
  await page.getByText(/Signed in as Olive Owner/).waitFor();
  // The banner follows /v1/status, re-read on the page change: the code went out, so it goes.
  await page.getByText('Break-glass is open').waitFor({ state: 'detached', timeout: 10_000 });
  t.like((await ta.call('GET', '/v1/settings/mail')).body, { provider: 'smtp', smtp_host: smtp.host, smtp_user: 'relay', smtp_password_set: true });
  t.is((await ta.call('GET', '/v1/status', { token: null })).body.auth.email_codes, 'working');
  t.false(JSON.stringify((await ta.call('GET', '/v1/ledger?limit=500')).body).includes('relay-pass-77'));
  t.deepEqual(bp.problems, []);
});

browserTest('sign-in with an e-mailed code from a real SMTP server; sign out ends the session on the server', async (t) => {
  const { ta, smtp } = await withMail(t);
  const bp = await openPage(t);
  const { page } = bp;

  await page.goto(ta.base + '/');
  await heading(bp, 'Sign in').waitFor();
  t.is(new URL(page.url()).pathname, '/sign-in');
  await visited(t, bp, 'e2e-2-sign-in');

  const before = smtp.messages.length;
  await page.getByLabel('E-mail address').fill(OWNER);
  await page.getByRole('button', { name: 'Send me a code' }).click();
  const codeBox = page.getByLabel(/Six-digit code/);
  await codeBox.waitFor();
  await visited(t, bp, 'e2e-2-code-sent');
  await codeBox.fill(await mailedCode(ta, smtp, OWNER, before));
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();

  await heading(bp, 'Home').waitFor();
  const who = page.getByText(/Signed in as/);
  await who.waitFor();
  t.regex(await who.innerText(), /First Owner \(owner@bank\.example\), role owner/);
  t.notRegex(await who.innerText(), /break-glass/);
  // The banner follows /v1/status, re-read on each page: once a code was sent it goes.
  await page.getByText('Break-glass is open').waitFor({ state: 'detached', timeout: 10_000 });
  t.is(await page.getByText('Break-glass is open').count(), 0, 'a code was sent: break-glass is closed');
  await visited(t, bp, 'e2e-2-home');

  const token = (await page.evaluate('sessionStorage.getItem("oncall.session")')) as string;
  t.is((await ta.call('GET', '/v1/auth/me', { token })).status, 200);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await heading(bp, 'Sign in').waitFor();
  await page.getByText('You have signed out.').waitFor();
  t.is(await page.evaluate('sessionStorage.getItem("oncall.session")'), null);
  t.is((await ta.call('GET', '/v1/auth/me', { token })).status, 401, 'the old token is refused by the server');
  await visited(t, bp, 'e2e-2-signed-out');

  // The relay starts refusing: asking for a code says it could not be sent, not "on its way".
  smtp.refuse('rcpt');
  t.true(await page.getByLabel('E-mailed code').isChecked(), 'codes worked: the code is the default');
  await page.getByLabel('E-mail address').fill(OWNER);
  await page.getByRole('button', { name: 'Send me a code' }).click();
  const failed = page.getByRole('alert').filter({ hasText: 'could not send e-mail just now' });
  await failed.waitFor({ timeout: 8000 });
  t.regex(await failed.innerText(), /no code will arrive\. Sign in with a password/);
  t.is((await ta.call('GET', '/v1/status', { token: null })).body.auth.email_codes, 'failing');
  await visited(t, bp, 'e2e-2-code-failed');
  t.deepEqual(bp.problems, []);
});

browserTest('bad input: a wrong admin token, a wrong code and an expired session are each said in words', async (t) => {
  // A wrong admin token at setup.
  const fresh = await service(t);
  const bp = await openPage(t);
  const { page } = bp;
  await page.goto(fresh.base + '/setup');
  await page.getByLabel('Admin token').fill('not-the-admin-token');
  await page.getByRole('button', { name: 'Continue' }).click();
  const tokenError = page.getByRole('alert').filter({ hasText: 'Error:' });
  await tokenError.waitFor();
  t.regex(await tokenError.innerText(), /^Error: .*not valid/);
  t.is(await page.getByRole('button', { name: 'Start the trial' }).count(), 0, 'setup does not move on');
  await visited(t, bp, 'e2e-3-wrong-admin-token');

  // A wrong code at sign-in.
  const { ta, smtp } = await withMail(t);
  await page.goto(ta.base + '/sign-in');
  await page.getByLabel('E-mail address').fill(OWNER);
  const before = smtp.messages.length;
  await page.getByRole('button', { name: 'Send me a code' }).click();
  await page.getByLabel(/Six-digit code/).waitFor();
  const right = await mailedCode(ta, smtp, OWNER, before);
  const wrong = right === '000000' ? '111111' : '000000';
  await page.getByLabel(/Six-digit code/).fill(wrong);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  const codeError = page.getByRole('alert').filter({ hasText: 'Error:' });
  await codeError.waitFor();
  t.regex(await codeError.innerText(), /^Error: .*code is wrong/);
  t.is(new URL(page.url()).pathname, '/sign-in');
  await visited(t, bp, 'e2e-3-wrong-code');

  // The right code signs in; 13 hours idle later, the next page returns to sign-in and says why.
  await page.getByLabel(/Six-digit code/).fill(right);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByText(/Signed in as/).waitFor();
  ta.clock.advance(13 * HOUR);
  await page.goto(ta.base + '/');
  await heading(bp, 'Sign in').waitFor();
  const why = page.getByRole('status').filter({ hasText: /12 hours|session/i });
  await why.waitFor();
  t.regex(await why.innerText(), /12 hours/);
  t.is(await page.evaluate('sessionStorage.getItem("oncall.session")'), null);
  await visited(t, bp, 'e2e-3-session-expired');
  t.deepEqual(bp.problems, []);
});
