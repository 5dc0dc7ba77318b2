import { copyFileSync, mkdirSync } from 'node:fs';
import { HOUR } from '../../host/clock.ts';
import { browserAs, browserTest, closeBrowser, consoleBuilt, heading, screenshot, visited } from '../helpers/browser.ts';
import { HOSTILE_ALERT, seedDay, seededApp } from '../helpers/digest-seed.ts';
import { signedIn } from '../helpers/people.ts';
import test from 'ava';

/*
 * The Digest page in a real browser (Debian's Chromium): the Markdown rendered, the day range
 * in the address, and an alert named like an HTML tag shown as text, never run. See
 * docs/digest.md.
 */

test.after.always(closeBrowser);

const SHOTS = '/work/shots/digest';

browserTest('the Digest page renders the seeded day, switches ranges, and shows an alert named <img …> as text', async (t) => {
  await consoleBuilt();
  const { ta } = await seededApp(t);
  await seedDay(ta);
  ta.clock.advance(HOUR);
  const bp = await browserAs(t, ta.base, await signedIn(ta, 'admin@bank.example', 'admin'));
  const { page } = bp;
  const ran: string[] = [];
  await page.exposeFunction('digestXss', (v: string) => ran.push(v));

  await page.goto(ta.base + '/');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Digest' }).click();
  await heading(bp, 'Digest').waitFor();
  const article = page.getByRole('article', { name: 'Digest of the last day' });
  await article.getByRole('heading', { level: 2, name: 'Digest of the last day' }).waitFor();
  t.is(await page.getByRole('heading', { level: 1 }).count(), 1, "one h1: the digest's headings go one level down");
  t.is(new URL(page.url()).pathname, '/digest');
  t.regex(await article.innerText(), /Opened: 3 \(mitigated 1, escalated 2\)/);
  const episodes = article.getByRole('table').first();
  t.deepEqual(await episodes.getByRole('row').allInnerTexts(), [
    'Service\tOpened\tClosed\tMitigated\tEscalated',
    'jobs\t1\t1\t1\t0',
    'batch\t1\t0\t0\t1',
    'cron\t1\t0\t0\t1',
  ]);
  // The hostile name is text in a cell; no element of it exists, nothing ran.
  await article.getByRole('cell', { name: HOSTILE_ALERT }).first().waitFor();
  t.is(await article.locator('img').count(), 0);
  t.is(await page.locator('b', { hasText: 'fixer' }).count(), 0, 'a connector problem with <b> stays text');
  t.true((await article.innerText()).includes('the <b>fixer</b> is down'));
  t.deepEqual(ran, []);
  t.regex(await article.innerText(), /Verifies \(checked /);
  t.deepEqual(bp.problems, [], 'no CSP refusal: right-aligned columns use a class, not a style attribute');
  await visited(t, bp, 'e2e-digest-1-day');
  mkdirSync(SHOTS, { recursive: true });
  copyFileSync(await screenshot(page, 'e2e-digest-1-day'), `${SHOTS}/digest-1-day.png`);

  // Seven days: the address says so, and a reload keeps it.
  await page.getByRole('radio', { name: '7 days' }).check();
  await page.getByRole('article', { name: 'Digest of the last 7 days' }).waitFor();
  t.is(new URL(page.url()).search, '?days=7');
  await page.reload();
  await page.getByRole('article', { name: 'Digest of the last 7 days' }).waitFor();
  t.true(await page.getByRole('radio', { name: '7 days' }).isChecked());
  await page.goBack();
  await page.getByRole('article', { name: 'Digest of the last day' }).waitFor();
  t.deepEqual(bp.problems, []);
  copyFileSync(await screenshot(page, 'e2e-digest-7-days'), `${SHOTS}/digest-after-back.png`);
});
