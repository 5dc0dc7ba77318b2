// The study (issue 16): every added service × every cause of the loaded packs, run read-only
// with no alert against Debian's Prometheus and a throwaway git repository, one cause at a time,
// paced on the injected clock; the report, the verdicts, stop, the time limit, standing aside,
// the 409, a restart, and no `check.` events.
import test from 'ava';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ExecutionContext } from 'ava';
import { SECOND, TestClock } from '../../host/clock.ts';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { waitFor } from '../helpers/alertmanager.ts';
import { family, startExporter } from '../helpers/exporter.ts';
import { makeHistory } from '../helpers/git-history.ts';
import { signedIn } from '../helpers/people.ts';
import { prometheusTest, startPrometheus } from '../helpers/prometheus.ts';

const OWNER = 'owner@bank.example';

/** A proxy in front of Prometheus that notes the injected clock's time of every request. */
async function countingProxy(t: ExecutionContext, target: string, clock: TestClock): Promise<{ url: string; at: number[] }> {
  const at: number[] = [];
  const to = new URL(target);
  const server = createServer((req, res) => {
    at.push(clock.now().getTime());
    const fwd = httpRequest({ host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    fwd.on('error', () => (res.writeHead(502), res.end()));
    req.pipe(fwd);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, at };
}

/** Disk 97 % full on `/data` of the db host, and a process to count as a target. */
const dbMetrics = () =>
  [
    family('node_filesystem_avail_bytes', 'gauge', [[{ mountpoint: '/data', fstype: 'ext4', device: 'sda1' }, 3e9]]),
    family('node_filesystem_size_bytes', 'gauge', [[{ mountpoint: '/data', fstype: 'ext4', device: 'sda1' }, 100e9]]),
    family('node_filesystem_readonly', 'gauge', [[{ mountpoint: '/data', fstype: 'ext4', device: 'sda1' }, 0]]),
  ].join('');

/**
 * An install with one pair of each verdict and each of the five obstacle kinds:
 * - db (postgres, linked to `metrics` and the git repository): the disk holds with no alert,
 *   target-down is ruled out (can prove), flapping-alert reads only the alert, memory-pressure
 *   applies only through alerts (at the alert), endpoint-down has no health URL (the data isn't there);
 * - web (no links, two metrics connectors): several connections could answer; no repository: nothing connected can read it;
 * - broken (linked to a connector whose Prometheus is gone): the read was refused or failed;
 * - lost (a workload link with no matchers, no job of its name): it can't be placed.
 */
async function estateApp(t: ExecutionContext, opts: { wait?: (ta: () => TestApp, ms: number) => Promise<void>; minutes?: number } = {}) {
  t.timeout(120_000);
  const db = await startExporter(t, dbMetrics);
  const prom = await startPrometheus(t, { jobs: [{ job: 'db', targets: [db.target] }] });
  await waitFor(
    'Prometheus to scrape db',
    async () => {
      const r = await fetch(`${prom.base}/api/v1/query?query=${encodeURIComponent('node_filesystem_avail_bytes{job="db"}')}`);
      return ((await r.json()) as any).data.result.length > 0;
    },
    30_000,
    100,
  );
  const repo = makeHistory(t, [{ at: '2026-01-01T00:00:00Z', author: 'Dev', email: 'dev@bank.example', subject: 'first', files: { 'a.txt': 'a' } }]);
  const clock = new TestClock(new Date());
  const proxy = await countingProxy(t, prom.base, clock);
  const waits: number[] = [];
  let ta: TestApp | null = null;
  ta = await startApp(t, {
    clock,
    studyWait: async (ms) => {
      waits.push(ms);
      if (opts.wait !== undefined) return opts.wait(() => ta!, ms);
      clock.advance(ms);
    },
  });
  await makeOperating(ta, OWNER);
  const put = (name: string, body: unknown) => ta!.call('PUT', `/v1/connectors/${name}`, { body });
  t.is((await put('metrics', { kind: 'prometheus', settings: { url: proxy.url } })).status, 201);
  t.is((await put('metrics2', { kind: 'prometheus', settings: { url: 'http://127.0.0.1:1' } })).status, 201);
  t.is((await put('repo', { kind: 'git', settings: { path: repo.dir } })).status, 201);
  const estate = await ta.call('PUT', '/v1/estate/overrides', {
    body: {
      services: {
        db: {
          owner: OWNER,
          tier: 1,
          technologies: ['postgres'],
          links: [
            { kind: 'workload', match: 'job="db"', connector: 'metrics' },
            { kind: 'repository', connector: 'repo' },
          ],
        },
        web: { tier: 2 },
        broken: { tier: 3, links: [{ kind: 'workload', match: 'job="broken"', connector: 'metrics2' }] },
        lost: { tier: 4, links: [{ kind: 'workload', name: 'lost-app', connector: 'metrics' }] },
      },
    },
  });
  t.true(estate.status === 200 || estate.status === 201, JSON.stringify(estate.body));
  return { ta, clock, waits, proxy };
}

const causes = (ta: TestApp) => ta.app.investigation.catalogue.causes.length;

async function allVerdicts(ta: TestApp): Promise<any[]> {
  const out: any[] = [];
  for (let offset = 0; ; offset += 7) {
    const page = await ta.call('GET', `/v1/study/verdicts?limit=7&offset=${offset}`);
    out.push(...page.body.verdicts);
    if (page.body.verdicts.length < 7) return out;
  }
}

prometheusTest(
  'a study judges every added service × every cause: each verdict, each obstacle kind, a disk filling with no alert, paced reads, no check events',
  async (t) => {
    const { ta, clock, waits, proxy } = await estateApp(t);
    const before = clock.now().getTime();
    t.deepEqual((await ta.call('GET', '/v1/study')).body, {
      id: null,
      state: 'idle',
      started_at: null,
      by: null,
      minutes: null,
      progress: { done: 0, total: 0 },
      finished_at: null,
      cut_short: null,
      reason: null,
      report: null,
    });
    const started = await ta.call('POST', '/v1/study', { body: {} });
    t.is(started.status, 202, JSON.stringify(started.body));
    t.like(started.body, { minutes: 15, by: 'admin-token', progress: { total: 4 * causes(ta) } });
    await ta.app.study.study.idle();

    const study = (await ta.call('GET', '/v1/study')).body;
    t.is(study.state, 'finished', JSON.stringify(study));
    t.false(study.cut_short);
    t.deepEqual(study.progress, { done: 4 * causes(ta), total: 4 * causes(ta) });
    const report = study.report;
    t.is(report.pairs.total, 4 * causes(ta));
    t.is(report.pairs.can_prove + report.pairs.cant_yet + report.pairs.at_the_alert, report.pairs.total);
    t.is(report.provable_share, Math.round((report.pairs.can_prove / report.pairs.total) * 10_000) / 10_000);
    t.true(report.pairs.can_prove > 0 && report.pairs.cant_yet > 0 && report.pairs.at_the_alert > 0);

    const verdicts = await allVerdicts(ta);
    t.is(verdicts.length, report.pairs.total, 'every pair is listed, page by page');
    const v = (service: string, cause: string) => verdicts.find((x) => x.service === service && x.cause === cause);
    t.like(v('db', 'prometheus/disk-full'), { verdict: 'can prove', obstacle: null });
    t.like(v('db', 'prometheus/target-down'), { verdict: 'can prove' });
    t.like(v('db', 'core/flapping-alert'), { verdict: 'at the alert', obstacle: null });
    t.like(v('db', 'prometheus/memory-pressure'), { verdict: 'at the alert' }, 'applies only through alerts and cannot answer without one');
    t.like(v('db', 'http/endpoint-down'), { verdict: "can't yet", obstacle: "the data isn't there" });
    t.like(v('web', 'prometheus/target-down'), { verdict: "can't yet", obstacle: 'several connections could answer' });
    t.like(v('web', 'core/recent-change'), { verdict: "can't yet", obstacle: 'nothing connected can read it' });
    t.like(v('broken', 'prometheus/target-down'), { verdict: "can't yet", obstacle: 'the read was refused or failed' });
    t.like(v('lost', 'prometheus/target-down'), { verdict: "can't yet", obstacle: "it can't be placed" });

    // The disk 97 % full that no rule watches.
    t.deepEqual(
      report.holding_now.map((h: any) => [h.service, h.cause]),
      [['db', 'prometheus/disk-full']],
    );
    t.regex(JSON.stringify(report.holding_now[0].evidence), /node_filesystem_avail_bytes/);
    // Obstacles: the five kinds, most common first, each with its fix and the pairs it blocks.
    const kinds = report.obstacles.map((o: any) => o.kind);
    t.deepEqual([...kinds].sort(), [
      "it can't be placed",
      'nothing connected can read it',
      'several connections could answer',
      "the data isn't there",
      'the read was refused or failed',
    ]);
    for (let i = 1; i < report.obstacles.length; i++) t.true(report.obstacles[i - 1].count >= report.obstacles[i].count, 'most common first');
    for (const o of report.obstacles) {
      t.is(o.count, o.pairs.length);
      t.regex(o.fix, /Connectors page|estate page/);
    }
    t.is(
      report.obstacles.reduce((n: number, o: any) => n + o.count, 0),
      report.pairs.cant_yet,
    );
    const db = report.services.find((s: any) => s.service === 'db');
    t.like(db, { tier: 1, owner: OWNER, holding_now: 1 });
    t.true(db.provable_share > 0 && db.provable_share < 1);
    t.deepEqual(
      report.services.map((s: any) => s.service),
      ['broken', 'db', 'lost', 'web'],
    );

    // Pacing: at least 1 s between causes, and between two reads of the connector.
    t.true(waits.filter((ms) => ms === 1000).length >= report.pairs.total - 1);
    t.true(proxy.at.length > 3, 'the study read Prometheus');
    for (let i = 1; i < proxy.at.length; i++)
      t.true(proxy.at[i]! - proxy.at[i - 1]! >= 1000, `read ${i} came ${proxy.at[i]! - proxy.at[i - 1]!} ms after the one before`);
    t.true(clock.now().getTime() - before >= (report.pairs.total - 1) * 1000);

    // Only study events; no check events; the ledger verifies.
    t.deepEqual((await ta.app.ledger.find({ type: 'check.', limit: 10, order: 'desc' })).events, []);
    const types = (await ta.app.ledger.find({ type: 'study.', limit: 10, order: 'asc' })).events.map((e) => e.type);
    t.deepEqual(types, ['study.started', 'study.finished']);
    const finished = (await ta.app.ledger.find({ type: 'study.finished', limit: 1, order: 'desc' })).events[0]!;
    t.like(finished.data, { provable_share: report.provable_share, pairs: report.pairs, cut_short: false, holding_now: 1 });
    t.true((await ta.app.verifyLedger()).ok);

    // Readiness reads the report: db was studied (a share below 1 and the disk holding), a service never studied says so.
    const autonomy = (await ta.call('GET', '/v1/autonomy')).body;
    const readiness = (s: string) => autonomy.services.find((x: any) => x.service === s)?.readiness ?? [];
    if (autonomy.services.some((x: any) => x.service === 'db')) {
      t.false(readiness('db').some((r: string) => /never been studied/.test(r)));
      t.true(readiness('db').some((r: string) => /could prove \d+ % of db's causes/.test(r)));
      t.true(readiness('db').some((r: string) => /prometheus\/disk-full/.test(r)));
    }
    t.true((await ta.app.governance.autonomy.readiness('never-added')).some((r) => /never-added has never been studied/.test(r)));
    t.false((await ta.app.governance.autonomy.readiness('db')).some((r) => /never been studied/.test(r)));
  },
);

prometheusTest('a stop asked mid-study ends it before the next cause, cut short, with what it has', async (t) => {
  let asked = false;
  const { ta } = await estateApp(t, {
    wait: async (ta, ms) => {
      const app = ta();
      app.clock.advance(ms);
      if (!asked && (await app.call('GET', '/v1/study')).body.progress.done >= 3) {
        asked = true;
        const stop = await app.call('POST', '/v1/study/stop');
        if (stop.status !== 200) throw new Error(JSON.stringify(stop.body));
      }
    },
  });
  t.is((await ta.call('POST', '/v1/study/stop')).body.error, 'study_not_running', 'nothing to stop yet');
  t.is((await ta.call('POST', '/v1/study', { body: { minutes: 30 } })).status, 202);
  await ta.app.study.study.idle();
  const s = (await ta.call('GET', '/v1/study')).body;
  t.like(s, { state: 'finished', cut_short: true, minutes: 30 });
  t.true(s.progress.done >= 3 && s.progress.done < s.progress.total);
  t.is(s.report.pairs.total, s.progress.done);
  t.true(s.report.cut_short);
  const types = (await ta.app.ledger.find({ type: 'study.', limit: 10, order: 'asc' })).events.map((e) => e.type);
  t.deepEqual(types, ['study.started', 'study.stop_requested', 'study.finished']);
  t.is((await ta.call('POST', '/v1/study/stop')).status, 409, 'a finished study cannot be stopped');
});

prometheusTest('the time limit on the injected clock ends the study, cut short', async (t) => {
  const { ta } = await estateApp(t, {
    wait: async (ta, ms) => {
      ta().clock.advance(ms + 60 * SECOND);
    },
  });
  t.is((await ta.call('POST', '/v1/study', { body: { minutes: 5 } })).status, 202);
  await ta.app.study.study.idle();
  const s = (await ta.call('GET', '/v1/study')).body;
  t.like(s, { state: 'finished', cut_short: true });
  t.true(s.progress.done <= 6, `done ${s.progress.done}`);
  t.true(s.report.cut_short);
});

prometheusTest('the study stands aside while an investigation runs, then resumes', async (t) => {
  let aside = 0;
  const { ta, waits } = await estateApp(t, {
    wait: async (ta, ms) => {
      ta().clock.advance(ms);
      if (ms === 5000 && ++aside === 3) await ta().app.db('investigations').where({ episode_id: 'e-running' }).delete();
    },
  });
  await ta.app.db('investigations').insert({
    episode_id: 'e-running',
    service: 'db',
    state: 'running',
    run: 1,
    requested_ms: ta.clock.now().getTime(),
    lease_holder: 'someone',
    lease_until_ms: ta.clock.now().getTime() + 3_600_000,
    started_at: ta.clock.now().toISOString(),
  });
  t.is((await ta.call('POST', '/v1/study')).status, 202);
  await ta.app.study.study.idle();
  t.is(waits.filter((w) => w === 5000).length, 3, 'it waited while the investigation ran');
  const s = (await ta.call('GET', '/v1/study')).body;
  t.like(s, { state: 'finished', cut_short: false });
  t.is(s.progress.done, s.progress.total);
});

test('POST /v1/study: minutes 5 to 120, whole; 403 for a viewer; 503 until operating', async (t) => {
  const ta = await startApp(t);
  t.is((await ta.call('POST', '/v1/study', { body: {} })).body.error, 'not_operating');
  t.is((await ta.call('GET', '/v1/study')).body.error, 'not_operating');
  await makeOperating(ta);
  for (const minutes of [4, 121, 15.5, '15', null, -5]) {
    const r = await ta.call('POST', '/v1/study', { body: { minutes } });
    t.is(r.status, 400, `minutes ${JSON.stringify(minutes)}`);
    t.is(r.body.error, 'invalid_body');
    t.regex(r.body.message, /minutes must be a whole number from 5 to 120/);
  }
  t.is((await ta.call('POST', '/v1/study', { body: { minutes: 15, more: 1 } })).status, 400);
  const viewer = await signedIn(ta, 'viewer@bank.example', 'viewer');
  const refused = await ta.call('POST', '/v1/study', { token: viewer, body: { minutes: 15 } });
  t.is(refused.status, 403);
  t.is((await ta.call('POST', '/v1/study/stop', { token: viewer })).status, 403);
  t.is((await ta.call('GET', '/v1/study', { token: viewer })).status, 200, 'everyone signed in reads it');
  t.is((await ta.call('GET', '/v1/study/verdicts?limit=0')).status, 400);
  t.is((await ta.call('GET', '/v1/study/verdicts?cursor=x')).status, 400);
  t.is((await ta.call('GET', '/v1/study', { token: null })).status, 401);
  t.deepEqual((await ta.call('GET', '/v1/study/verdicts')).body, { study: null, state: null, verdicts: [], total: 0, limit: 100, offset: 0 });
  // No service added: a study of nothing finishes at once with an empty report.
  t.is((await ta.call('POST', '/v1/study', { body: { minutes: 5 } })).status, 202);
  await ta.app.study.study.idle();
  t.like((await ta.call('GET', '/v1/study')).body, { state: 'finished', report: { provable_share: 0, pairs: { total: 0 } } });
});

/** An app whose study waits on a gate the test opens, so it stays running. */
async function gated(t: ExecutionContext, opts: { keepStore?: boolean } = {}) {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const ta = await startApp(t, { ...opts, studyWait: () => gate });
  await makeOperating(ta);
  const put = await ta.call('PUT', '/v1/estate/overrides', { body: { services: { a: { tier: 2 }, b: { tier: 3 } } } });
  t.true(put.status === 200 || put.status === 201, JSON.stringify(put.body));
  return { ta, open };
}

test('only one study at a time: of concurrent starts exactly one is accepted, the rest 409', async (t) => {
  const { ta, open } = await gated(t);
  const answers = await Promise.all(Array.from({ length: 6 }, () => ta.call('POST', '/v1/study', { body: { minutes: 5 } })));
  t.deepEqual(answers.map((a) => a.status).sort(), [202, 409, 409, 409, 409, 409]);
  for (const a of answers.filter((x) => x.status === 409)) t.is(a.body.error, 'study_running');
  t.like((await ta.call('GET', '/v1/study')).body, { state: 'running' });
  t.like((await ta.call('GET', '/v1/live')).body.study[0], { kind: 'study', progress: { state: 'running' } });
  open();
  await ta.app.study.study.idle();
  t.like((await ta.call('GET', '/v1/study')).body, { state: 'finished' });
  t.is((await ta.call('POST', '/v1/study', { body: { minutes: 5 } })).status, 202, 'another may start once it is done');
  await ta.app.study.study.idle();
});

test('a host stopping mid-study fails it at once, "the host restarted"; the state survives the restart', async (t) => {
  const { ta } = await gated(t, { keepStore: true });
  t.teardown(() => ta.store.cleanup());
  t.is((await ta.call('POST', '/v1/study', { body: { minutes: 5 } })).status, 202);
  await ta.app.close();
  const again = await startApp(t, { store: ta.store, clock: ta.clock });
  const s = (await again.call('GET', '/v1/study')).body;
  t.like(s, { state: 'failed', reason: 'the host restarted', report: null });
  const failed = (await again.app.ledger.find({ type: 'study.failed', limit: 5, order: 'desc' })).events;
  t.is(failed.length, 1);
  t.is(failed[0]!.reason, 'the host restarted');
  t.true((await again.app.verifyLedger()).ok);
  t.is((await again.call('POST', '/v1/study', { body: { minutes: 5 } })).status, 202, 'a new study may start');
});

test("a host that died mid-study: another host's tick fails it once the lease has run out", async (t) => {
  const { ta } = await gated(t, { keepStore: true });
  t.teardown(async () => {
    await ta.app.close();
    await ta.store.cleanup();
  });
  t.is((await ta.call('POST', '/v1/study', { body: { minutes: 5 } })).status, 202);
  const other = await startApp(t, { store: ta.store, clock: ta.clock });
  await other.app.tick();
  t.like((await other.call('GET', '/v1/study')).body, { state: 'running' }, 'the lease still holds');
  ta.clock.advance(61 * SECOND);
  await other.app.tick();
  t.like((await other.call('GET', '/v1/study')).body, { state: 'failed', reason: 'the host restarted' });
  t.is((await other.app.ledger.find({ type: 'study.failed', limit: 5, order: 'desc' })).events.length, 1);
});
