import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { SECOND } from '../../host/clock.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { browserAs, browserTest, closeBrowser, consoleBuilt, heading, visited, type BrowserPage } from '../helpers/browser.ts';
import { signedIn } from '../helpers/people.ts';

/*
 * The episode page of an investigated incident in a real browser (Debian's Chromium through
 * playwright-core) against the whole service, with a vendor's pack (SERVICE_PLUGINS_DIR): the
 * diagnosis first, each holding cause with its evidence (the query to re-run, the source, the
 * time, the observed value), the unknowns with their obstacle, what was ruled out collapsed;
 * an investigation under way says "Investigating…" and the diagnosis replaces it without a
 * reload; a skipped one says why. Screenshots go to test/artifacts/, axe-core checks each page.
 * See docs/console.md, "/episodes/<id>".
 */

test.after.always(closeBrowser);

const ERROR_QUERY = 'sum(rate(http_requests_total{service="checkout",code=~"5.."}[5m])) / sum(rate(http_requests_total{service="checkout"}[5m]))';

const PACK = `
const AT = '2026-06-01T00:00:00.000Z';
const cause = (name, title, specificity, check, more = {}) => ({ id: 'demo/' + name, title, specificity, applies: { always: true }, reads: [], check, ...more });
const commits = Array.from({ length: 6 }, (_, i) => ({ sha: 'c0ffee' + i + 'deadbeefcafef00d', author: 'dev' + i + '@bank.example', message: 'Change number ' + i + ' to the checkout service', at: AT }));
export default {
  causes: [
    cause('error-rate', 'Error rate above its threshold', 60, () => ({
      verdict: 'holds',
      reason: '42 % of requests fail, above the 5 % threshold (a week before: 0.2 %)',
      evidence: [{ source: 'prometheus', kind: 'metric', query: ${JSON.stringify(ERROR_QUERY)}, at: AT, observed: { value: 0.42, threshold: 0.05 }, excerpt: '42 % of requests to checkout failed over 5 minutes' }],
    })),
    cause('recent-change', 'A recent change', 80, () => ({
      verdict: 'holds',
      reason: '6 commits to checkout in the hour before the incident',
      evidence: [{ source: 'git', kind: 'commits', query: 'commits to payments/checkout since 2026-05-31T23:00:00Z', at: AT, observed: commits, excerpt: commits.map((c) => c.sha.slice(0, 8) + ' ' + c.message).join('\\n') }],
      remedy: { action: 'revert', params: { sha: commits[0].sha } },
    })),
    cause('target-down', 'A target is down', 50, () => ({
      verdict: 'ruled_out',
      reason: 'every target of checkout is up',
      evidence: [{ source: 'prometheus', kind: 'metric', query: 'up{job="checkout"} == 0', at: AT, observed: [], excerpt: 'no target is down' }],
    })),
    cause('memory', 'Memory pressure', 40, async (ctx) => { await ctx.metrics.query('up'); return { verdict: 'ruled_out', reason: 'read', evidence: [] }; }, { reads: ['metrics'] }),
    // Held (for payments only) until the test releases it: an investigation under way.
    cause('slow', 'Held back by the test', 30, (ctx) =>
      new Promise((resolve) => {
        if (ctx.service.name !== 'payments') return resolve({ verdict: 'ruled_out', reason: 'not held', evidence: [{ source: 'test', kind: 'none', query: 'none', at: AT, observed: 0, excerpt: 'not held' }] });
        (globalThis.__releaseSlow ??= []).push(() => resolve({ verdict: 'holds', reason: 'released by the test', evidence: [{ source: 'test', kind: 'none', query: 'release', at: AT, observed: 1, excerpt: 'released' }] }));
      }),
    ),
  ],
};
`;

/** An operating install with the demo pack, its console built. */
async function operating(t: ExecutionContext): Promise<TestApp> {
  await consoleBuilt();
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-e2e-packs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, 'demo'));
  writeFileSync(
    path.join(dir, 'demo', 'plugin.json'),
    JSON.stringify({ name: 'demo', version: '1.0.0', kind: 'pack', api: '^1.1.0', entry: 'index.mjs', description: 'the e2e pack' }),
  );
  writeFileSync(path.join(dir, 'demo', 'index.mjs'), PACK);
  const ta = await startApp(t, { env: { SERVICE_PLUGINS_DIR: dir } });
  await makeOperating(ta);
  return ta;
}

async function push(ta: TestApp, service: string, name: string): Promise<void> {
  const res = await ta.call('POST', '/v1/alerts/generic', {
    token: INGEST_TOKEN,
    body: { alerts: [{ name, service, severity: 'critical', status: 'firing', summary: `${name} on ${service}` }] },
  });
  if (res.status !== 202) throw new Error(`push: ${res.status} ${JSON.stringify(res.body)}`);
}

/** The debounce passes on the injected clock and the episode opens. */
async function opened(ta: TestApp, service: string): Promise<string> {
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  const list = (await ta.call('GET', `/v1/episodes?query=service:${service}`)).body.episodes as Array<{ id: string }>;
  if (list.length !== 1) throw new Error(`expected one episode of ${service}, got ${list.length}`);
  return list[0]!.id;
}

const h2s = (bp: BrowserPage) => bp.page.locator('main h2').allInnerTexts();

browserTest('an investigated incident shows the diagnosis first, each holding cause with the query to re-run, the unknowns with their obstacle', async (t) => {
  const ta = await operating(t);
  await push(ta, 'checkout', 'HighErrorRate');
  const id = await opened(ta, 'checkout');
  await ta.app.investigation.investigations.run();
  await ta.app.acting.acting.run();
  const api = (await ta.call('GET', `/v1/episodes/${id}`)).body;
  t.is(api.investigation.state, 'diagnosed');
  t.deepEqual(api.diagnosis.holds, ['demo/recent-change', 'demo/error-rate']);

  const bp = await browserAs(t, ta.base, await signedIn(ta, 'vera@bank.example', 'viewer'));
  const { page } = bp;
  await page.goto(`${ta.base}/episodes/${id}`);
  await heading(bp, 'Incident: checkout').waitFor();
  await page.getByRole('heading', { name: 'Diagnosis' }).waitFor();

  // The order a person needs: the diagnosis, what holds, what could not be checked, what was ruled out, then the rest.
  t.deepEqual((await h2s(bp)).slice(0, 4), ['Diagnosis', 'What holds, and the evidence', 'What could not be checked', 'Ruled out']);
  t.deepEqual((await h2s(bp)).slice(4), ['Action', 'Alerts', 'Data', 'Decision and outcome', 'Timeline']);
  // The action path (test/console/console-e2e-acting.test.ts has it in full): no connector performs the revert, so nothing is proposed.
  const acting = page.locator('section[aria-labelledby="action-heading"]');
  t.regex(await acting.innerText(), /Proposal\s+○ nothing proposed/);
  t.regex(await acting.innerText(), /○ abstain[\s\S]*no configured connector performs revert/);

  // The diagnosis: the summary the API gives, then the causes that hold, ranked, with title and reason.
  const diagnosis = page.locator('section[aria-labelledby="diagnosis-heading"]');
  t.is(await diagnosis.locator('.summary').innerText(), api.diagnosis.summary);
  t.regex(api.diagnosis.summary, /^Most likely: A recent change/);
  const ranked = await diagnosis.locator('ol.ranked > li').allInnerTexts();
  t.deepEqual(await diagnosis.locator('ol.ranked > li a').allInnerTexts(), ['A recent change', 'Error rate above its threshold'], 'most specific first');
  t.regex(ranked[0]!, /A recent change demo\/recent-change: 6 commits to checkout in the hour before the incident/);
  t.regex(ranked[1]!, /Error rate above its threshold demo\/error-rate: 42 % of requests fail/);
  t.regex(await diagnosis.innerText(), /\d+ causes checked: 2 hold, \d+ unknown, \d+ ruled out\./);
  // The moment the run read is said, and each evidence item says which moment it was read at.
  t.regex(await page.getByTestId('diagnosis-moment').innerText(), /Every check read at .*, the episode's opening/);
  t.regex(
    await page.locator('article#cause-demo-error-rate').getByTestId('evidence-moment').first().innerText(),
    /\(read (at the episode's opening|at a moment the check chose|now, when the check ran)\)/,
  );

  // A holding cause's evidence: the exact query in a monospace block, source, time, observed value, excerpt.
  const errorRate = page.locator('article#cause-demo-error-rate');
  t.is(await errorRate.locator('pre code').innerText(), ERROR_QUERY, 'the query as the check ran it, to copy and re-run');
  t.regex(await errorRate.locator('pre code').evaluate((el) => (globalThis as any).getComputedStyle(el).fontFamily as string), /mono/i, 'in a monospace block');
  const item = await errorRate.locator('dl.evidence').innerText();
  t.regex(item, /prometheus\s+\(metric\)/);
  t.regex(item, /2026-06-01T00:00:00\.000Z/);
  t.regex(item, /\{"value":0\.42,"threshold":0\.05\}/, 'the observed value, compactly');
  t.regex(item, /42 % of requests to checkout failed over 5 minutes/);
  // Copy puts the exact query on the clipboard.
  await bp.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ta.base });
  await errorRate.getByRole('button', { name: 'Copy the query of evidence 1 of Error rate above its threshold' }).click();
  await errorRate.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
  t.is(await page.evaluate(() => (globalThis as any).navigator.clipboard.readText() as Promise<string>), ERROR_QUERY);
  // A long observed value is cut, the whole of it behind a disclosure; the remedy is named.
  const change = page.locator('article#cause-demo-recent-change');
  t.regex(await change.locator('.observed').innerText(), /…$/);
  t.is(await change.getByText('The whole value').count(), 1);
  t.regex(await change.innerText(), /Remedy it names: revert \{"sha":"c0ffee0deadbeefcafef00d"\}/);
  // The diagnosis links to each holding cause.
  t.is(await diagnosis.getByRole('link', { name: 'Error rate above its threshold' }).getAttribute('href'), '#cause-demo-error-rate');

  // The unknown: its obstacle and what would make it knowable.
  const memory = page.locator('article#cause-demo-memory');
  const unknownText = await memory.innerText();
  t.regex(unknownText, /Obstacle: nothing connected can read it\./);
  t.regex(unknownText, /no connector reads metrics/);
  t.is(await memory.locator('xpath=ancestor::section').getAttribute('aria-labelledby'), 'unknown-heading');

  // Ruled out: collapsed until asked for.
  const ruled = page.locator('section[aria-labelledby="ruled-heading"] details').first();
  t.false(await ruled.evaluate((el) => (el as any).open as boolean));
  t.regex(await ruled.locator('summary').first().innerText(), /^\d+ causes ruled out: .*A target is down.*Held back by the test/);
  t.false(await page.locator('article#cause-demo-target-down').isVisible());
  await visited(t, bp, 'e2e-episode-1-diagnosed');

  await ruled.locator('summary').first().click();
  await page.locator('article#cause-demo-target-down').waitFor();
  t.is(await page.locator('article#cause-demo-target-down pre code').innerText(), 'up{job="checkout"} == 0');
  await change.getByText('The whole value').click();
  await visited(t, bp, 'e2e-episode-1-diagnosed-open');

  // The page agrees with the API on every verdict shown.
  t.is(await page.locator('article.verdict').count(), api.verdicts.length);
  // On a phone's width nothing of the investigation runs off the side: long queries and values wrap.
  await page.setViewportSize({ width: 400, height: 800 });
  await visited(t, bp, 'e2e-episode-1-narrow');
  const wide = await page.evaluate(() => {
    const d = (globalThis as any).document;
    const w = (globalThis as any).innerWidth as number;
    return [...d.querySelectorAll('main section *')]
      .filter((el: any) => el.getBoundingClientRect().right > w + 1)
      .slice(0, 5)
      .map((el: any) => `${el.tagName.toLowerCase()}.${el.className} ${Math.round(el.getBoundingClientRect().right)} ${String(el.textContent).slice(0, 60)}`);
  });
  t.deepEqual(wide, [], 'nothing wider than the screen');
  t.deepEqual(bp.problems, []);
});

browserTest('an investigation under way says "Investigating…" and the diagnosis replaces it without a reload; a skipped one says why', async (t) => {
  const ta = await operating(t);
  const g = globalThis as { __releaseSlow?: Array<() => void> };
  t.teardown(() => {
    for (const release of g.__releaseSlow ?? []) release();
    g.__releaseSlow = [];
  });
  await push(ta, 'payments', 'HighErrorRate');
  const id = await opened(ta, 'payments');
  // The grouping pass nudged the investigation: it runs, held by the slow check.
  const running = ta.app.investigation.investigations.run();

  const bp = await browserAs(t, ta.base, await signedIn(ta, 'vera@bank.example', 'viewer'));
  const { page } = bp;
  await page.goto(`${ta.base}/episodes/${id}`);
  await heading(bp, 'Incident: payments').waitFor();
  const status = page.getByRole('status').filter({ hasText: 'Investigating…' });
  await status.waitFor();
  t.deepEqual(await h2s(bp), ['Diagnosis', 'Alerts', 'Data', 'Decision and outcome', 'Timeline'], 'nothing but the state while it runs');
  await visited(t, bp, 'e2e-episode-2-investigating');

  // The slow check answers: the diagnosis appears without a reload (the page follows the ledger head).
  for (const release of g.__releaseSlow ?? []) release();
  await running;
  await page.locator('section[aria-labelledby="diagnosis-heading"] .summary').waitFor({ timeout: 10_000 });
  t.is(await status.count(), 0);
  t.regex(await page.locator('section[aria-labelledby="diagnosis-heading"]').innerText(), /Held back by the test demo\/slow: released by the test/);

  // Autonomy off for a service: not investigated, and the page says why.
  await push(ta, 'ledgerd', 'QueueBacklog');
  const r = await ta.call('POST', '/v1/autonomy', { body: { service: 'ledgerd', level: 'off', by: 'owner@bank.example' } });
  t.is(r.status, 202, JSON.stringify(r.body));
  const skipped = await opened(ta, 'ledgerd');
  await ta.app.investigation.investigations.run();
  await page.goto(`${ta.base}/episodes/${skipped}`);
  await heading(bp, 'Incident: ledgerd').waitFor();
  await page.getByText('Skipped: autonomy of ledgerd is off: no investigation.').waitFor();
  t.deepEqual(await h2s(bp), ['Diagnosis', 'Alerts', 'Data', 'Decision and outcome', 'Timeline']);
  await visited(t, bp, 'e2e-episode-3-skipped');
  t.deepEqual(bp.problems, []);
});
