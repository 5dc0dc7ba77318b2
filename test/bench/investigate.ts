/**
 * `npm run bench:investigate`: how long the real service (`node host/main.ts`) takes to diagnose
 * 200 episodes opening at once over 50 services, with the shipped packs (packs/) reading a local
 * Prometheus, and what intake still takes meanwhile. SQLite, and MySQL when SERVICE_DATABASE_URL
 * names a MySQL/MariaDB server.
 *
 * The issue's "200 episodes opening at once over 50 services": at most one episode per service is
 * open at a time (the database enforces it), so it is read as **4 waves of 50**, pushed back to
 * back as fast as the service allows: each wave fires one alert per service (a generic push with
 * new ids), the 50 episodes open after SERVICE_DEBOUNCE_S (set to 1 here), the alerts are
 * resolved so the episodes close, and the next wave fires (test/bench/waves.ts). Investigations
 * are not waited for between waves: they queue up and run as the service takes them.
 *
 * Once, for all engines: 50 small text-format exporters (node:http, one per service:
 * `http_requests_total` with 2xx and 5xx, a latency histogram, `node_filesystem_*`,
 * `node_memory_*`, `process_start_time_seconds`; one service in ten down, one with 5xx, one slow,
 * one disk full, one short of memory, one restarted, one depending on a down one), and Debian's
 * Prometheus scraping each as job `svc-i` every second (test/bench/fleet.ts).
 *
 * Per engine, on a fresh store, one service process (SERVICE_DEBOUNCE_S=1):
 *   0. brought to `operating`; a `prometheus` connector `prom` (PUT /v1/connectors/prom); the 50
 *      services added to the estate, each with a workload link `job="svc-i"` through `prom`, its
 *      health URL and technologies (PUT /v1/estate/overrides);
 *   1. intake alone, for comparison: bench:intake's single-alert pushes (Alertmanager v4,
 *      32 connections, a pool of 5,000 fingerprints of services `load-0…19`) to
 *      `POST /v1/alerts/alertmanager` for --baseline seconds; then the same load started again,
 *      running until the last diagnosis (both skipped with --no-load);
 *   2. the waves pushed to `POST /v1/alerts/bench`, and every episode polled
 *      (`GET /v1/episodes/{id}`) until its investigation is `diagnosed` (or `skipped`);
 *   3. figures: seconds from the first push to the last diagnosis (`investigation.finished_at`;
 *      target ≤ 60 s), each episode's open → diagnosed time, the verdicts per cause and whether
 *      each episode's planted cause held, intake's pushes/s over the same time against
 *      bench:intake's target (SQLite 4,000/s, MySQL 1,500/s), the service's peak RSS.
 * The service, Prometheus and the exporters are stopped and the stores removed in every case.
 *
 * Flags (or env): --services N (BENCH_SERVICES, 50), --episodes N (BENCH_EPISODES, 200; a
 * multiple of --services), --connections N (BENCH_CONNECTIONS, 32: the intake load),
 * --no-load (BENCH_NO_LOAD=1), --baseline S (BENCH_BASELINE, 10: intake alone), --timeout S (BENCH_TIMEOUT, 300: give up on diagnoses after),
 * --only sqlite|mysql (BENCH_ONLY), --profile (BENCH_PROFILE=1).
 */
import { randomBytes } from 'node:crypto';
import { SINGLE_PUSH_TARGET, alert, drive, envelope, startPushes, type Phase } from './alertmanager-load.ts';
import { count, enginesToRun, flag, heading, machine, printReport, round1, runBenchmark, table, type Check, type Engine } from './common.ts';
import { estateOverrides, startFleet, type Fleet } from './fleet.ts';
import { call, expect, makeOperating, stopAndMeasure, topOfProfile, withService } from './service.ts';
import { InvestigationWatch, pushWaves, type WaveTimes, type Watched } from './waves.ts';

const ADMIN_TOKEN = `bench-admin-${randomBytes(16).toString('hex')}`;
const INGEST_TOKEN = `bench-ingest-${randomBytes(16).toString('hex')}`;
const SECRET_KEY = 'investigate-benchmark-secret-key-0123456789ab';
const CONNECTOR = 'prom';
/** The issue's target: every episode diagnosed within this many seconds of the first push. */
const TARGET_S = 60;
const LOAD_POOL = 5_000;

interface Options {
  services: number;
  episodes: number;
  connections: number;
  load: boolean;
  baselineS: number;
  timeoutS: number;
  profile: boolean;
}

/** How long checks ran, ms: how many ran, p50 / p99 / max. */
type CheckMs = { ran: number; p50: number; p99: number; max: number };
/** A cause's verdicts over all episodes, and how long its checks ran (those that ran: took_ms > 0). */
type CauseCounts = Record<string, { holds: number; ruled_out: number; unknown: number; obstacles: Record<string, number>; check_ms: CheckMs | null }>;

interface EngineResult {
  engine: Engine;
  load_before: string;
  episodes: number;
  diagnosed: number;
  skipped: number;
  /** First push → the last `investigation.finished_at`, s (null when not all finished). */
  last_diagnosis_s: number | null;
  /** First push → when the watch saw the last one finished, s. */
  seen_all_s: number | null;
  open_to_diagnosed_s: { p50: number; p99: number; max: number } | null;
  waves: WaveTimes[];
  /** `GET /v1/episodes/{id}` reads the watch made. */
  episode_reads: number;
  /** `decision.diagnosed` events in the ledger by the end: the waves' episodes, and the intake load's (`load-*`, re-run as new alert names join). */
  diagnoses_recorded: { fleet: number; other: number };
  causes: CauseCounts;
  /** Every check that ran. */
  check_ms: CheckMs | null;
  planted: { held: number; of: number; missed: string[] };
  /** Intake alone, just before the waves. */
  intake_alone: Phase | null;
  /** Intake from the first push of the waves to the last diagnosis. */
  intake: Phase | null;
  service_vm_hwm_mb: number | null;
  service_rss_end_mb: number | null;
  profile: string[] | null;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

function tally(episodes: Watched[]): CauseCounts {
  const out: CauseCounts = {};
  for (const e of episodes)
    for (const v of e.verdicts) {
      const c = (out[v.cause] ??= { holds: 0, ruled_out: 0, unknown: 0, obstacles: {}, check_ms: null });
      if (v.verdict === 'holds' || v.verdict === 'ruled_out' || v.verdict === 'unknown') c[v.verdict]++;
      if (v.obstacle !== null) c.obstacles[v.obstacle] = (c.obstacles[v.obstacle] ?? 0) + 1;
    }
  for (const cause of Object.keys(out)) out[cause]!.check_ms = checkTimes(episodes, cause);
  return out;
}

/** The checks that ran (took_ms > 0) over all episodes, of one cause or of every cause. */
function checkTimes(episodes: Watched[], cause?: string): CheckMs | null {
  const ms = episodes.flatMap((e) => e.verdicts.filter((v) => v.took_ms > 0 && (cause === undefined || v.cause === cause)).map((v) => v.took_ms));
  return ms.length === 0 ? null : { ran: ms.length, p50: pct(ms, 50), p99: pct(ms, 99), max: Math.max(...ms) };
}

/** Whether each episode's planted causes (fleet.ts `expected`) hold in its diagnosis. */
function planted(episodes: Watched[], fleet: Fleet): EngineResult['planted'] {
  const expected = new Map(fleet.services.map((s) => [s.name, s.expected]));
  const missed: string[] = [];
  let of = 0;
  let held = 0;
  for (const e of episodes)
    for (const cause of expected.get(e.service) ?? []) {
      of++;
      if (e.holds.includes(cause)) held++;
      else missed.push(`${e.service} wave ${e.wave}: ${cause} (${e.verdicts.find((v) => v.cause === cause)?.verdict ?? 'not run'})`);
    }
  return { held, of, missed };
}

/** Counts the ledger's `decision.diagnosed` events, of the fleet's services and of others. */
async function diagnosesRecorded(base: string, fleet: Fleet): Promise<EngineResult['diagnoses_recorded']> {
  const names = new Set(fleet.services.map((s) => s.name));
  const out = { fleet: 0, other: 0 };
  let before: number | null = null;
  type Page = { events: Array<{ seq: number; data: { service?: string } }>; more: boolean };
  for (;;) {
    const page: Page = await expect<Page>(
      'the decision.diagnosed events',
      200,
      call(base, 'GET', `/v1/ledger?type=decision.diagnosed&limit=2000${before === null ? '' : `&before_seq=${before}`}`, ADMIN_TOKEN),
    );
    for (const e of page.events) out[names.has(e.data.service ?? '') ? 'fleet' : 'other']++;
    if (!page.more || page.events.length === 0) return out;
    before = page.events[page.events.length - 1]!.seq;
  }
}

async function benchEngine(engine: Engine, serverUrl: string | null, fleet: Fleet, o: Options): Promise<EngineResult> {
  return withService(
    engine,
    serverUrl,
    'investigate',
    { adminToken: ADMIN_TOKEN, ingestToken: INGEST_TOKEN, secretKey: SECRET_KEY, profile: o.profile, env: { SERVICE_DEBOUNCE_S: '1' } },
    async ({ service, log, load_before, profileDir }) => {
      const base = service.base;
      await makeOperating(base, ADMIN_TOKEN);
      await expect(
        'the prometheus connector',
        201,
        call(base, 'PUT', `/v1/connectors/${CONNECTOR}`, ADMIN_TOKEN, { kind: 'prometheus', settings: { url: fleet.prometheus.base } }),
      );
      await expect('the estate', 200, call(base, 'PUT', '/v1/estate/overrides', ADMIN_TOKEN, estateOverrides(fleet.services, CONNECTOR)));
      await expect('a first push', 202, call(base, 'POST', '/v1/alerts/alertmanager', INGEST_TOKEN, JSON.parse(envelope([alert('ff', 0, 'load')]))));
      const bodies = Array.from({ length: LOAD_POOL }, (_, n) => envelope([alert('a1', n, 'load')]));

      let intakeAlone: Phase | null = null;
      if (o.load) {
        log(`intake alone: single-alert pushes, ${o.connections} connections, ${o.baselineS} s…`);
        intakeAlone = await drive(base, INGEST_TOKEN, bodies, 1, o.connections, o.baselineS);
        log(`  ${intakeAlone.pushes_per_s} pushes/s, p50 ${intakeAlone.p50_ms} ms, p99 ${intakeAlone.p99_ms} ms`);
      }
      const waves = o.episodes / o.services;
      const t0 = Date.now();
      const deadline = t0 + o.timeoutS * 1000;
      const load = o.load ? startPushes(base, INGEST_TOKEN, bodies, 1, o.connections, o.timeoutS + 60) : null;
      log(
        `${o.episodes} episodes: ${waves} waves of ${o.services} services${o.load ? `, intake load of ${o.connections} connections meanwhile` : ', no intake load'}…`,
      );
      const watch = new InvestigationWatch(base, ADMIN_TOKEN);
      const watching = watch.run(o.episodes, deadline, (done, known) =>
        log(`  ${done} of ${known} episodes seen so far diagnosed (${round1((Date.now() - t0) / 1000)} s)`),
      );
      let waveTimes: WaveTimes[];
      try {
        waveTimes = await pushWaves({
          base,
          adminToken: ADMIN_TOKEN,
          ingestToken: INGEST_TOKEN,
          services: fleet.services,
          waves,
          t0,
          stepTimeoutMs: 60_000,
          opened: (e) => watch.add(e),
          log,
        });
      } catch (e) {
        load?.stop();
        await watching.catch(() => undefined);
        throw e;
      }
      const episodes = await watching;
      load?.stop();
      const intake = load === null ? null : await load.done;
      if (intake !== null)
        log(
          `  intake meanwhile: ${intake.pushes_per_s} pushes/s over ${intake.seconds} s, p50 ${intake.p50_ms} ms, p99 ${intake.p99_ms} ms${intake.clean ? '' : `, NOT CLEAN: ${JSON.stringify(intake.statuses)}, ${intake.errors} errors, ${intake.timeouts} timeouts`}`,
        );
      const diagnoses_recorded = await diagnosesRecorded(base, fleet);
      const memory = await stopAndMeasure(service);

      const diagnosed = episodes.filter((e) => e.state === 'diagnosed').length;
      const skipped = episodes.filter((e) => e.state === 'skipped').length;
      const finished = episodes.filter((e) => e.finished_at !== null);
      const all = episodes.length === o.episodes && diagnosed + skipped === o.episodes;
      const last = finished.length === 0 ? null : Math.max(...finished.map((e) => Date.parse(e.finished_at!)));
      const spans = finished.map((e) => (Date.parse(e.finished_at!) - Date.parse(e.t_open)) / 1000);
      return {
        engine,
        load_before,
        episodes: episodes.length,
        diagnosed,
        skipped,
        last_diagnosis_s: all && last !== null ? round1((last - t0) / 1000) : null,
        seen_all_s: watch.lastSeenDoneAt === null ? null : round1((watch.lastSeenDoneAt - t0) / 1000),
        open_to_diagnosed_s: spans.length === 0 ? null : { p50: round1(pct(spans, 50)), p99: round1(pct(spans, 99)), max: round1(Math.max(...spans)) },
        waves: waveTimes,
        episode_reads: watch.reads,
        diagnoses_recorded,
        causes: tally(episodes),
        check_ms: checkTimes(episodes),
        planted: planted(episodes, fleet),
        intake_alone: intakeAlone,
        intake,
        ...memory,
        profile: profileDir === null ? null : topOfProfile(profileDir),
      };
    },
  );
}

// ------------------------------------------------------------------ report

function checks(r: EngineResult, o: Options): Check[] {
  const out: Check[] = [
    {
      engine: r.engine,
      what: `first push → last of ${o.episodes} diagnoses (s)`,
      value: r.last_diagnosis_s ?? -1,
      target: `≤ ${TARGET_S}`,
      pass: r.last_diagnosis_s !== null && r.last_diagnosis_s <= TARGET_S,
    },
  ];
  if (r.intake !== null)
    out.push({
      engine: r.engine,
      what: 'intake single-alert pushes/s meanwhile',
      value: r.intake.pushes_per_s,
      target: `≥ ${SINGLE_PUSH_TARGET[r.engine].toLocaleString('en')}`,
      pass: r.intake.clean && r.intake.pushes_per_s >= SINGLE_PUSH_TARGET[r.engine],
    });
  return out;
}

function report(results: EngineResult[], started: Date, o: Options, mysqlSkipped: boolean): void {
  const verdict = (c: Check | undefined) => (c === undefined ? '' : c.pass ? 'PASS' : 'FAIL');
  const rows: string[][] = [['engine', 'measure', 'value', 'detail', 'target', 'result']];
  const all: Check[] = [];
  for (const r of results) {
    const c = checks(r, o);
    all.push(...c);
    const span = r.open_to_diagnosed_s;
    rows.push([
      r.engine,
      `${o.episodes} episodes (${r.waves.length} waves × ${o.services}): first push → last diagnosis`,
      r.last_diagnosis_s === null ? 'not all' : `${r.last_diagnosis_s} s`,
      `${r.diagnosed} diagnosed, ${r.skipped} skipped of ${r.episodes} opened`,
      c[0]!.target + ' s',
      verdict(c[0]),
    ]);
    rows.push([r.engine, '  episode open → diagnosed, p50 / p99 / max', span === null ? '' : `${span.p50} / ${span.p99} / ${span.max} s`, '', '', '']);
    const ms = r.check_ms;
    rows.push([
      r.engine,
      '  each check that ran, p50 / p99 / max',
      ms === null ? '' : `${ms.p50} / ${ms.p99} / ${ms.max} ms`,
      ms === null ? '' : `${ms.ran} checks`,
      '',
      '',
    ]);
    const lastWave = r.waves[r.waves.length - 1];
    rows.push([r.engine, '  waves: first push → last episode closed', lastWave === undefined ? '' : `${lastWave.all_closed_s} s`, '', '', '']);
    rows.push([r.engine, '  planted causes that held', `${r.planted.held} of ${r.planted.of}`, '', '', '']);
    if (r.intake !== null) {
      const i = r.intake;
      rows.push([
        r.engine,
        `intake meanwhile: single-alert pushes, ${i.connections} conns`,
        `${i.pushes_per_s.toLocaleString('en')}/s`,
        `${i.pushes.toLocaleString('en')} in ${i.seconds} s, p50 ${i.p50_ms} ms, p99 ${i.p99_ms} ms, ${i.clean ? 'all 202' : `${i.non_202} non-202, ${i.errors} err, ${i.timeouts} t/o`}`,
        c[1]!.target + '/s',
        verdict(c[1]),
      ]);
    }
    if (r.intake_alone !== null) {
      const a = r.intake_alone;
      rows.push([
        r.engine,
        '  intake alone just before, same load',
        `${a.pushes_per_s.toLocaleString('en')}/s`,
        `${a.pushes.toLocaleString('en')} in ${a.seconds} s, p50 ${a.p50_ms} ms, p99 ${a.p99_ms} ms, ${a.clean ? 'all 202' : `${a.non_202} non-202, ${a.errors} err, ${a.timeouts} t/o`}`,
        '',
        '',
      ]);
    }
    rows.push([r.engine, '  service peak RSS (VmHWM)', `${r.service_vm_hwm_mb ?? '?'} MB`, '', '', '']);
  }
  const out: string[] = ['', heading('Investigate', started), '', table(rows), ''];
  for (const r of results) {
    out.push(
      `${r.engine}: load average before ${r.load_before}; the watch read episodes ${r.episode_reads} times; the ledger has ${r.diagnoses_recorded.fleet} decision.diagnosed events of the ${o.services} services and ${r.diagnoses_recorded.other} of the intake load's services (load-*)`,
    );
    for (const w of r.waves) out.push(`${r.engine}:   wave ${w.wave}: fired ${w.fired_s} s, all open ${w.all_open_s} s, all closed ${w.all_closed_s} s`);
    out.push(
      `${r.engine}: verdicts per cause (holds / ruled out / unknown), over ${r.episodes} episodes, and each check's time (p50 / p99 / max ms of those that ran):`,
    );
    for (const [cause, n] of Object.entries(r.causes).sort(([a], [b]) => a.localeCompare(b))) {
      const obstacles = Object.entries(n.obstacles)
        .map(([k, v]) => `${v} × ${k}`)
        .join(', ');
      const ms = n.check_ms === null ? 'not run' : `${n.check_ms.p50} / ${n.check_ms.p99} / ${n.check_ms.max} ms`;
      out.push(
        `${r.engine}:   ${cause.padEnd(32)} ${String(n.holds).padStart(4)} / ${String(n.ruled_out).padStart(4)} / ${String(n.unknown).padStart(4)}  ${ms.padEnd(22)}${obstacles === '' ? '' : `  (${obstacles})`}`,
      );
    }
    if (r.planted.missed.length > 0) out.push(`${r.engine}: planted causes that did not hold (first 10): ${r.planted.missed.slice(0, 10).join('; ')}`);
    for (const [what, p] of [
      ['the intake load during the investigations', r.intake],
      ['intake alone', r.intake_alone],
    ] as const)
      if (p !== null && !p.clean)
        out.push(`${r.engine}: ${what} had errors (${JSON.stringify(p.statuses)}, ${p.errors} err, ${p.timeouts} t/o): its figures do not count`);
    if (r.profile !== null) out.push(...r.profile.map((l) => `${r.engine}: ${l}`));
  }
  const summary = {
    ...machine('investigate', started),
    services: o.services,
    episodes: o.episodes,
    debounce_s: 1,
    load: o.load,
    results: results.map(({ profile: _p, planted: { missed: _m, ...planted }, ...r }) => ({ ...r, planted })),
    checks: all,
    all_pass: all.every((c) => c.pass),
  };
  printReport(out, all, mysqlSkipped, summary);
}

async function main(): Promise<void> {
  const services = count('services', 'BENCH_SERVICES', 50);
  const episodes = count('episodes', 'BENCH_EPISODES', 200);
  if (episodes % services !== 0) throw new Error(`--episodes (${episodes}) must be a multiple of --services (${services}): one episode per service per wave`);
  const o: Options = {
    services,
    episodes,
    connections: count('connections', 'BENCH_CONNECTIONS', 32),
    load: !flag('no-load', 'BENCH_NO_LOAD'),
    baselineS: count('baseline', 'BENCH_BASELINE', 10),
    timeoutS: count('timeout', 'BENCH_TIMEOUT', 300),
    profile: flag('profile', 'BENCH_PROFILE'),
  };
  const { engines, serverUrl, mysqlSkipped } = enginesToRun();
  const started = new Date();
  const log = (s: string) => process.stderr.write(`${s}\n`);
  log(`investigate benchmark: ${engines.join(' + ')}; ${episodes} episodes over ${services} services${o.load ? '' : ', no intake load'}`);
  const fleet = await startFleet(services, log);
  try {
    const results: EngineResult[] = [];
    for (const engine of engines) results.push(await benchEngine(engine, serverUrl, fleet, o));
    report(results, started, o, mysqlSkipped);
  } finally {
    await fleet.stop();
  }
}

await runBenchmark('investigate', main);
