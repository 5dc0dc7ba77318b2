import test from 'ava';
import { SECOND } from '../../host/clock.ts';
import { INGEST_TOKEN, makeOperating, startApp } from '../helpers/app.ts';
import { browserAs, browserTest, closeBrowser, consoleBuilt, heading, visited } from '../helpers/browser.ts';
import { signedIn } from '../helpers/people.ts';

/*
 * Issue 22 in a real browser (Debian's Chromium through playwright-core): a storm episode in the
 * incidents list with its counts and on its own page with the services it holds (item 7); events a
 * caller recorded with the ingest token marked as the caller's in the episode's timeline and the
 * audit log, and never taken for the end of the action path (item 2). Screenshots go to
 * test/artifacts/, axe-core checks each page.
 */

test.after.always(closeBrowser);

browserTest(
  'a storm shows in the incidents list with its counts and on its page with the services it holds; caller events are marked as the caller’s',
  async (t) => {
    await consoleBuilt();
    const ta = await startApp(t, { env: { SERVICE_STORM_PER_SOURCE: '3' }, manualTick: true });
    await makeOperating(ta);
    const pushes = Array.from({ length: 12 }, (_, i) =>
      ta.call('POST', '/v1/alerts/generic', {
        token: INGEST_TOKEN,
        body: { name: 'Down', service: `svc-${i}`, severity: i === 11 ? 'critical' : 'warning', id: `d${i}` },
      }),
    );
    for (const r of await Promise.all(pushes)) t.is(r.status, 202);
    ta.clock.advance(20 * SECOND);
    await ta.app.episodes.process();
    const storm = ((await ta.call('GET', '/v1/episodes?query=kind:storm')).body.episodes as any[])[0];
    t.like(storm, { storm: { alerts: 9, services: 9 } });
    // What an ingest-token holder records on an episode: an outcome the service never reached.
    const other = ((await ta.call('GET', '/v1/episodes?query=service:svc-0')).body.episodes as any[])[0];
    t.is(
      (
        await ta.call('POST', '/v1/events', {
          token: INGEST_TOKEN,
          body: { type: 'outcome.mitigated', actor: 'deploy-bot', reason: 'fixed it', trace: other.id },
        })
      ).status,
      201,
    );

    const bp = await browserAs(t, ta.base, await signedIn(ta, 'vera@bank.example', 'viewer'));
    const { page } = bp;
    await page.goto(`${ta.base}/incidents`);
    await heading(bp, /Incidents/).waitFor();
    const row = page.locator('tr', { has: page.getByRole('link', { name: 'storm:generic' }) });
    await row.waitFor();
    t.regex(await row.innerText(), /storm\s+9 alerts of 9 services/);
    await visited(t, bp, 'storm-incidents');

    await page.goto(`${ta.base}/episodes/${storm.id}`);
    await heading(bp, 'Alert storm: generic').waitFor();
    const section = page.locator('section[aria-labelledby="storm-h"]');
    t.regex(await section.innerText(), /9 alerts of 9 services so far/);
    t.is(await section.locator('tbody tr').count(), 9);
    await visited(t, bp, 'storm-episode');

    await page.goto(`${ta.base}/episodes/${other.id}`);
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
    const caller = page.locator('ol.timeline li', { hasText: 'outcome.mitigated' });
    t.regex(await caller.innerText(), /by deploy-bot\s*· recorded by a caller \(ingest-token\), not by the service/);
    t.notRegex(await page.locator('main').innerText(), /Done: mitigated/, 'the caller’s outcome is not the path’s');
    await visited(t, bp, 'caller-event-timeline');

    await page.goto(`${ta.base}/audit?trace=${encodeURIComponent(other.id)}`);
    await page.getByText('recorded by a caller (ingest-token)').first().waitFor();
    await visited(t, bp, 'caller-event-audit');
    t.deepEqual(bp.problems, []);
  },
);
