// Diagnoses an operator can trust (issue 21): each run reads at a stated moment (a re-run at the
// newest signal's arrival) and says so; a replaced run is closed; a cause that explains another
// on the same subject ranks above it; unknowns are not worded as findings; check_settings are
// validated against what each cause declares.
import test, { type ExecutionContext } from 'ava';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SECOND } from '../../host/clock.ts';
import { diagnose, rank } from '../../host/investigation/diagnosis.ts';
import type { VerdictResult } from '../../host/investigation/run-check.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';

/**
 * A pack of two causes: `moment/disk` holds once its moment is 40 s or more after the opening (a
 * disk that filled 50 s after the episode opened) and cites evidence read at that moment;
 * `moment/now` reads "the present" (its evidence is at the wall clock's now). `moment/gate` waits
 * for the test to open `globalThis.__momentGate` (a run the test replaces while it runs).
 */
const PACK = `
const ev = (at, query) => ({ source: 'test', kind: 'metric', query, at, observed: { at }, excerpt: 'read at ' + at });
export default {
  causes: [
    { id: 'moment/disk', title: 'Disk full', specificity: 65, applies: { always: true }, reads: [],
      check: (ctx) => ({
        verdict: Date.parse(ctx.at) - Date.parse(ctx.episode.opened_at) >= 40000 ? 'holds' : 'ruled_out',
        reason: 'read at ' + ctx.at + ' (' + ctx.moment + ')',
        evidence: [ev(ctx.at, 'disk')],
      }) },
    { id: 'moment/now', title: 'Health now', specificity: 40, applies: { always: true }, reads: [],
      check: () => ({ verdict: 'ruled_out', reason: 'healthy now', evidence: [ev(new Date().toISOString(), 'GET /health')] }) },
    { id: 'moment/gate', title: 'Gated', specificity: 10, applies: { alerts: ['Gated'] }, reads: [],
      check: async () => { await (globalThis.__momentGate ?? Promise.resolve()); return { verdict: 'ruled_out', reason: 'done', evidence: [ev(new Date().toISOString(), 'g')] }; } },
  ],
};
`;

async function started(t: ExecutionContext): Promise<TestApp> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-moment-'));
  mkdirSync(path.join(dir, 'moment'));
  writeFileSync(path.join(dir, 'moment', 'plugin.json'), JSON.stringify({ name: 'moment', version: '1.0.0', kind: 'pack', api: '^1.3.0', entry: 'index.mjs' }));
  writeFileSync(path.join(dir, 'moment', 'index.mjs'), PACK);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ta = await startApp(t, { env: { SERVICE_PLUGINS_DIR: dir }, manualTick: true });
  await makeOperating(ta);
  return ta;
}

const push = async (ta: TestApp, name: string, service = 'checkout') => {
  const r = await ta.call('POST', '/v1/alerts/generic', {
    token: INGEST_TOKEN,
    body: { alerts: [{ name, service, severity: 'critical', status: 'firing', id: `${service}-${name}` }] },
  });
  if (r.status !== 202) throw new Error(JSON.stringify(r.body));
};

async function episodeOf(ta: TestApp, service = 'checkout'): Promise<any> {
  const list = (await ta.call('GET', `/v1/episodes?query=service:${service}`)).body.episodes as any[];
  return (await ta.call('GET', `/v1/episodes/${list[0].id}`)).body;
}

test('a re-run reads at the newest signal: a disk that filled 50 s after the opening holds, and the diagnosis and evidence say which moment', async (t) => {
  const ta = await started(t);
  await push(ta, 'HighErrorRate');
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  await ta.app.investigation.investigations.run();
  const first = await episodeOf(ta);
  t.like(first.diagnosis, { at: first.t_open, moment: 'opening' });
  t.like(
    first.verdicts.find((v: any) => v.cause === 'moment/disk'),
    { verdict: 'ruled_out' },
  );

  ta.clock.advance(50 * SECOND);
  await push(ta, 'DiskAlmostFull');
  await ta.app.episodes.process();
  await ta.app.investigation.investigations.run();
  const again = await episodeOf(ta);
  const joined = Date.parse(first.t_open) + 50 * SECOND;
  t.like(again.investigation, { run: 2 });
  t.like(again.diagnosis, { at: new Date(joined).toISOString(), moment: 'newest_signal' });
  const disk = again.verdicts.find((v: any) => v.cause === 'moment/disk');
  t.is(disk.verdict, 'holds', 'read at the joining alert, not at the opening, the disk is full');
  t.regex(disk.reason, /\(newest_signal\)$/);
  const byCause = (c: string) => again.evidence.find((e: any) => e.cause === c);
  t.like(byCause('moment/disk'), { at: new Date(joined).toISOString(), moment: 'newest_signal' });
  t.is(byCause('moment/now').moment, 'now', 'a read of the present says it was read now, not at the stated moment');
  const diagnosed = again.timeline.filter((e: any) => e.type === 'decision.diagnosed').at(-1);
  t.like(diagnosed.data, { run: 2, at: new Date(joined).toISOString(), moment: 'newest_signal' });
});

test('a run replaced while it runs (new alerts joined) is closed with check.replaced; the newer run is the one shown', async (t) => {
  const ta = await started(t);
  let open!: () => void;
  (globalThis as { __momentGate?: Promise<void> }).__momentGate = new Promise<void>((r) => (open = r));
  t.teardown(() => delete (globalThis as { __momentGate?: Promise<void> }).__momentGate);
  await push(ta, 'Gated');
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  const running = ta.app.investigation.investigations.run();
  // While run 1 waits at its gate, an alert of a new name joins: run 2 is asked for.
  for (let i = 0; i < 100 && (await ta.app.investigation.investigations.running(5)).length === 0; i++) await new Promise((r) => setImmediate(r));
  await push(ta, 'LatencyHigh');
  await ta.app.episodes.process();
  open();
  await running;
  await ta.app.investigation.investigations.run();
  const ep = await episodeOf(ta);
  t.like(ep.investigation, { state: 'diagnosed', run: 2 });
  const replaced = ep.timeline.filter((e: any) => e.type === 'check.replaced');
  t.is(replaced.length, 1, 'run 1 is closed once');
  t.like(replaced[0].data, { run: 1, by_run: 2 });
  const started1 = ep.timeline.filter((e: any) => e.type === 'check.started' && e.data.run === 1);
  t.is(started1.length, 1, 'one check.started for run 1');
  t.true(started1[0].data.causes.length > 0);
  t.is(replaced[0].data.causes, started1[0].data.causes.length, 'it closes every check run 1 started');
});

const verdict = (cause: string, specificity: number, subjects: string[], explains: string[] = []): VerdictResult => ({
  cause,
  title: cause,
  verdict: 'holds',
  reason: 'r',
  obstacle: null,
  evidence: [],
  remedy: null,
  verification: null,
  strength: 1,
  specificity,
  subjects,
  explains,
  took_ms: 1,
});

test('a crash loop outranks the target it keeps down (the same instance); on another instance specificity decides', (t) => {
  const down = verdict('prometheus/target-down', 60, ['10.0.0.5:8080']);
  const loop = verdict('prometheus/restarts', 55, ['10.0.0.5:8080'], ['prometheus/target-down']);
  t.deepEqual(
    rank([down, loop]).map((v) => v.cause),
    ['prometheus/restarts', 'prometheus/target-down'],
  );
  const elsewhere = verdict('prometheus/restarts', 55, ['10.0.0.9:8080'], ['prometheus/target-down']);
  t.deepEqual(
    rank([down, elsewhere]).map((v) => v.cause),
    ['prometheus/target-down', 'prometheus/restarts'],
  );
});

test('causes that could not be checked are listed as open questions, not worded as findings', (t) => {
  const unknown: VerdictResult = {
    ...verdict('core/dependency-incident', 90, []),
    title: 'Incident in a dependency',
    verdict: 'unknown',
    obstacle: "it can't be placed",
  };
  const out: VerdictResult = { ...verdict('prometheus/error-rate', 30, []), verdict: 'ruled_out' };
  const d = diagnose([unknown, out], 'checkout');
  t.is(d.summary, "No checked cause holds (1 ruled out). Not known, as it could not be checked: Incident in a dependency (it can't be placed).");
  t.notRegex(d.summary, /A dependency has an incident/);
});

test("check_settings are checked against the causes' declared settings: an unknown cause, setting or type answers 400 naming it", async (t) => {
  const ta = await started(t);
  const put = (check_settings: unknown) => ta.call('PUT', '/v1/estate/overrides', { body: { services: { checkout: { check_settings } } } });
  const unknownCause = await put({ 'prometheus/eror-rate': { threshold: 0.1 } });
  t.is(unknownCause.status, 400);
  t.like(unknownCause.body, { error: 'invalid_body' });
  t.regex(unknownCause.body.message, /services\.checkout\.check_settings\.prometheus\/eror-rate: no loaded pack declares the cause prometheus\/eror-rate/);
  const unknownSetting = await put({ 'prometheus/error-rate': { treshold: 0.1 } });
  t.is(unknownSetting.status, 400);
  t.regex(unknownSetting.body.message, /prometheus\/error-rate\.treshold: prometheus\/error-rate has no setting treshold \(its settings: threshold, window/);
  const wrongType = await put({ 'prometheus/error-rate': { threshold: '10%' } });
  t.is(wrongType.status, 400);
  t.regex(wrongType.body.message, /threshold: must be a number like its default 0\.05, not "10%"/);
  // Nothing was written by the refused PUTs.
  t.deepEqual((await ta.call('GET', '/v1/estate/overrides')).body.services ?? {}, {});
  const good = await put({ 'prometheus/error-rate': { threshold: 0.1 } });
  t.is(good.status, 200, JSON.stringify(good.body));
});
