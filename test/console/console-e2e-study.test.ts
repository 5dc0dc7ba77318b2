import test from 'ava';
import { makeOperating, startApp } from '../helpers/app.ts';
import { browserAs, browserTest, closeBrowser, consoleBuilt, heading, visited } from '../helpers/browser.ts';
import { signedIn } from '../helpers/people.ts';

/*
 * The Study page in a real browser (Debian's Chromium): never run, running with live progress
 * and a stop button, then the report as tiles, what holds now and the obstacles with where to
 * fix them. A viewer sees it all but no start button. See docs/study.md.
 */

test.after.always(closeBrowser);

browserTest('the Study page starts a study, shows its progress live, then the report as tiles, holding-now and obstacles linking to their fix', async (t) => {
  t.timeout(120_000);
  await consoleBuilt();
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let clockOf: (() => { advance(ms: number): void }) | null = null;
  const ta = await startApp(t, {
    studyWait: async (ms) => {
      await gate;
      clockOf?.().advance(ms);
    },
  });
  clockOf = () => ta.clock;
  await makeOperating(ta);
  // payments: a health URL nothing answers on (endpoint-down holds with no alert); ledger: nothing linked.
  const put = await ta.call('PUT', '/v1/estate/overrides', {
    body: { services: { payments: { tier: 1, owner: 'owner@bank.example', health_url: 'http://127.0.0.1:1/health' }, ledger: { tier: 2 } } },
  });
  t.true(put.status === 200 || put.status === 201, JSON.stringify(put.body));

  const bp = await browserAs(t, ta.base, await signedIn(ta, 'alice@bank.example', 'admin'));
  const { page } = bp;
  await page.goto(ta.base + '/study');
  await heading(bp, 'Study').waitFor();
  await page.getByTestId('study-state').filter({ hasText: 'Never run.' }).waitFor();
  await visited(t, bp, 'e2e-study-1-idle');

  await page.getByLabel('Time limit (minutes, 5 to 120)').fill('20');
  await page.getByRole('button', { name: 'Start a study' }).click();
  await page
    .getByTestId('study-state')
    .filter({ hasText: /Running: \d+ of \d+ pairs judged/ })
    .waitFor();
  await page.getByRole('button', { name: 'Stop the study' }).waitFor();
  t.like((await ta.call('GET', '/v1/study')).body, { state: 'running', minutes: 20 });
  await visited(t, bp, 'e2e-study-2-running');

  open();
  await ta.app.study.study.idle();
  // The page polls every 2 s while running: the report shows without a reload.
  await page.getByTestId('provable-share').waitFor({ timeout: 15_000 });
  await page.getByTestId('study-state').filter({ hasText: 'Finished' }).waitFor();
  const tiles = page.getByTestId('study-tile');
  t.is(await tiles.count(), 2);
  t.regex(await tiles.filter({ hasText: 'payments' }).innerText(), /tier 1 · owner@bank\.example[\s\S]*1 holding now/);
  t.regex(await page.getByTestId('holding-now').innerText(), /payments: http\/endpoint-down/);
  const obstacles = page.getByTestId('obstacles');
  t.regex(await obstacles.innerText(), /nothing connected can read it/);
  t.true((await obstacles.getByRole('link', { name: 'Connectors page' }).count()) > 0, 'a connector to add links to the Connectors page');
  await obstacles.locator('summary').first().click();
  t.true((await obstacles.locator('a[href^="/estate/"]').count()) > 0, 'the services blocked link to their estate pages');
  t.deepEqual(bp.problems, []);
  await visited(t, bp, 'e2e-study-3-report');

  // A viewer reads the report but cannot start a study.
  const viewer = await browserAs(t, ta.base, await signedIn(ta, 'val@bank.example', 'viewer'));
  await viewer.page.goto(ta.base + '/study');
  await viewer.page.getByTestId('provable-share').waitFor();
  t.is(await viewer.page.getByRole('button', { name: 'Start a study' }).count(), 0);
});
