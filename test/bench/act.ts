/**
 * `npm run bench:act` (issue 15, "Speed"): from an alert's arrival to `action.executed` for an L2
 * `runbook` action, p50 and p99 over 100 episodes, excluding the debounce and the remedy's wait;
 * target: p99 under 2 s. SQLite, and MySQL when SERVICE_DATABASE_URL names a MySQL/MariaDB server.
 *
 * Once: a local HTTP peer (act-peer.ts) answering every service's health URL with 503 until its
 * runbook has run, and the runbook endpoint (200 at once; dry runs too).
 *
 * Per engine, a fresh store and one service process (`node host/main.ts`) with
 * SERVICE_DEBOUNCE_S=1 and autonomy.json (every service L2) in SERVICE_CONFIG_DIR:
 *   0. operating; the shipped `http` connector `rb` on the peer (a bearer token, dry runs on);
 *      the policy (`safe_for_l2: ["runbook"]`, a cap of 1,000 actions an hour); the estate:
 *      services `svc-0…` each with `health_url` on the peer and a `runbook` link `restart`
 *      through `rb`; every service checked to be at L2 from the file (GET /v1/autonomy);
 *   1. waves: W services' alerts pushed at once (one generic push each, `POST /v1/alerts/bench`);
 *      the shipped pack `http/endpoint-down` holds and proposes `runbook restart`, which runs
 *      unasked (rehearsed first); the wave ends when each of its episodes has reached
 *      `action.executed` (or failed, was refused, escalated or asked for approval); its alerts
 *      are then resolved, and the next wave fires. A service is used again only after its
 *      previous episode has closed (one open episode per service);
 *   2. figures from the ledger (act-watch.ts): per episode, the alert's arrival (the intake time
 *      of its first alert, `episode.opened`'s `first_fired`) to `action.executed`, minus
 *      SERVICE_DEBOUNCE_S; the remedy's wait comes after `action.executed`, so it is not in it.
 *      A debounce of 1 s, not 0: with 0, every opening waits for the grouping pass that runs at
 *      most every 200 ms after a push (intake's batching), a wait a real debounce (20 s by
 *      default) absorbs, since the pass is then scheduled for the window's end.
 *
 * The runbook calls (each episode's exactly once, with the token) and `GET /v1/ledger/verify`
 * are checked too; a run with any problem is not clean (never PASS). The service's peak RSS is
 * reported. Services, stores, the peer and temp folders are removed in every case.
 *
 * Flags (or env): --episodes N (BENCH_EPISODES, 100), --services N (BENCH_SERVICES, 100),
 * --wave N (BENCH_WAVE, 10: alerts pushed at once), --debounce S (BENCH_DEBOUNCE, 1),
 * --timeout S (BENCH_TIMEOUT, 60: per wave), --only sqlite|mysql (BENCH_ONLY).
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startPeer, type Peer } from './act-peer.ts';
import { CONNECTOR, checkL2, configDir, configure, serviceNames } from './act-setup.ts';
import { LedgerWatch, type EpisodeSteps } from './act-watch.ts';
import { count, enginesToRun, heading, loadAverage, machine, option, printReport, runBenchmark, table, type Check, type Engine } from './common.ts';
import { call, expect, makeOperating, stopAndMeasure, withService } from './service.ts';
import { figures, stages, type Figures, type Step } from './act-figures.ts';

const ADMIN_TOKEN = `bench-admin-${randomBytes(16).toString('hex')}`;
const INGEST_TOKEN = `bench-ingest-${randomBytes(16).toString('hex')}`;
const RUNBOOK_TOKEN = `bench-runbook-${randomBytes(16).toString('hex')}`;
const SECRET_KEY = 'act-benchmark-secret-key-0123456789abcdef';
const SOURCE = 'bench';
/** The issue's target: p99 of arrival → action.executed under this many ms. */
const TARGET_P99_MS = 2000;

interface Options {
  episodes: number;
  services: number;
  wave: number;
  debounceS: number;
  timeoutS: number;
}

interface RunResult {
  engine: Engine;
  load_before: string;
  load_after: string;
  episodes: number;
  executed: number;
  /** Episodes whose path ended otherwise, or never reached an end within the wave's time. */
  not_executed: Array<{ service: string; end: string; why: string | null }>;
  /** arrival → action.executed, less the debounce. */
  latency_ms: Figures | null;
  stages: Record<string, Step>;
  runbook_runs_wrong: string[];
  ledger_ok: boolean;
  wall_s: number;
  ledger_reads: number;
  /** Ledger events written while the waves ran, by type (most first). */
  ledger_events: Record<string, number>;
  service_vm_hwm_mb: number | null;
  clean: boolean;
}

/** One alert of a wave, firing or resolved (a generic alert; the service label places it). */
const alertOf = (wave: number, service: string, status: 'firing' | 'resolved') => ({
  id: `w${wave}-${service}`,
  name: 'ServiceDown',
  severity: 'critical',
  status,
  service,
  labels: { env: 'bench', wave: String(wave) },
  summary: `${service} does not answer its health check`,
});

/** Polls `done` every 25 ms until it answers true, or `deadline` (epoch ms) passes: answers whether it did. */
async function until(deadline: number, done: () => boolean): Promise<boolean> {
  while (!done()) {
    if (Date.now() > deadline) return false;
    await sleep(25);
  }
  return true;
}

/** The waves, back to back; answers every wave's episodes (undefined where none opened). */
async function runWaves(base: string, peer: Peer, watch: LedgerWatch, o: Options, log: (s: string) => void): Promise<Array<EpisodeSteps | undefined>> {
  const names = serviceNames(o.services);
  const last = new Map<string, EpisodeSteps>();
  const all: Array<EpisodeSteps | undefined> = [];
  const waves = Math.ceil(o.episodes / o.wave);
  for (let w = 0; w < waves; w++) {
    const services = Array.from({ length: Math.min(o.wave, o.episodes - w * o.wave) }, (_, i) => names[(w * o.wave + i) % names.length]!);
    const deadline = Date.now() + o.timeoutS * 1000;
    // One open episode per service: a service's next alert waits for its last episode to close.
    if (!(await until(deadline, () => services.every((s) => last.get(s) === undefined || last.get(s)!.closed_ms !== null))))
      throw new Error(`wave ${w}: earlier episodes of its services did not close within ${o.timeoutS} s`);
    peer.down(services);
    const fired = Date.now();
    await Promise.all(services.map((s) => expect(`wave ${w} ${s}`, 202, call(base, 'POST', `/v1/alerts/${SOURCE}`, INGEST_TOKEN, alertOf(w, s, 'firing')))));
    // The same clock: an alert's intake time is after `fired` (a few ms of slack for rounding).
    const mine = () => services.map((s) => watch.episodeOf(s, fired - 5, last.get(s)?.id));
    await until(deadline, () => mine().every((e) => e !== undefined && e.end !== null));
    const eps = mine();
    for (const e of eps) if (e !== undefined) last.set(e.service, e);
    all.push(...eps);
    await expect(
      `wave ${w} resolving`,
      202,
      call(base, 'POST', `/v1/alerts/${SOURCE}`, INGEST_TOKEN, { alerts: services.map((s) => alertOf(w, s, 'resolved')) }),
    );
    const done = eps.filter((e) => e?.end === 'executed').length;
    if (w % Math.max(1, Math.floor(waves / 10)) === 0 || done < services.length) log(`  wave ${w + 1}/${waves}: ${done}/${services.length} executed`);
  }
  return all;
}

async function benchRun(engine: Engine, serverUrl: string | null, peer: Peer, o: Options): Promise<RunResult> {
  const names = serviceNames(o.services);
  peer.reset();
  const config = configDir(names);
  const env = { SERVICE_DEBOUNCE_S: String(o.debounceS), SERVICE_CONFIG_DIR: config.dir };
  try {
    return await withService(
      engine,
      serverUrl,
      'act',
      { adminToken: ADMIN_TOKEN, ingestToken: INGEST_TOKEN, secretKey: SECRET_KEY, profile: false, env },
      async ({ service, log, load_before }) => {
        const base = service.base;
        await makeOperating(base, ADMIN_TOKEN);
        await configure(base, ADMIN_TOKEN, { peer: peer.base, token: RUNBOOK_TOKEN, services: names });
        await checkL2(base, ADMIN_TOKEN, names);
        log(`${o.services} services at L2 by autonomy.json, a runbook link restart each through connector ${CONNECTOR} (http)`);
        const watch = new LedgerWatch(base, ADMIN_TOKEN);
        await watch.start();
        const t0 = Date.now();
        log(`${o.episodes} episodes in waves of ${o.wave}…`);
        let eps: Array<EpisodeSteps | undefined>;
        try {
          eps = await runWaves(base, peer, watch, o, log);
        } finally {
          await watch.stop();
        }
        const wall_s = Math.round((Date.now() - t0) / 100) / 10;
        const verify = await expect<{ ok: boolean }>('ledger verify', 200, call(base, 'GET', '/v1/ledger/verify', ADMIN_TOKEN));
        const load_after = loadAverage();
        const memory = await stopAndMeasure(service);
        return summarise({ engine, load_before, load_after, eps, o, peer, watch, ledger_ok: verify.ok, wall_s, vm: memory.service_vm_hwm_mb });
      },
    );
  } finally {
    config.remove();
  }
}

function summarise(r: {
  engine: Engine;
  load_before: string;
  load_after: string;
  eps: Array<EpisodeSteps | undefined>;
  o: Options;
  peer: Peer;
  watch: LedgerWatch;
  ledger_ok: boolean;
  wall_s: number;
  vm: number | null;
}): RunResult {
  const debounceMs = r.o.debounceS * 1000;
  const executed = r.eps.filter((e): e is EpisodeSteps => e?.end === 'executed' && e.executed_ms !== null);
  const latency = executed.map((e) => e.executed_ms! - e.arrived_ms - debounceMs);
  const not_executed = r.eps
    .map((e, i) => ({ e, i }))
    .filter(({ e }) => e?.end !== 'executed')
    .map(({ e, i }) => ({ service: e?.service ?? `episode ${i} (none opened)`, end: e?.end ?? 'no end seen', why: e?.why ?? null }));
  const perService = new Map<string, number>();
  for (const e of r.eps) if (e !== undefined) perService.set(e.service, (perService.get(e.service) ?? 0) + 1);
  const runbook_runs_wrong = [...perService]
    .filter(([s, n]) => r.peer.calls(s).runs !== n)
    .map(([s, n]) => `${s}: ${r.peer.calls(s).runs} runs for ${n} episodes`);
  const clean = not_executed.length === 0 && runbook_runs_wrong.length === 0 && r.ledger_ok && r.peer.unauthorised() === 0;
  return {
    engine: r.engine,
    load_before: r.load_before,
    load_after: r.load_after,
    episodes: r.eps.length,
    executed: executed.length,
    not_executed,
    latency_ms: figures(latency),
    stages: stages(executed, debounceMs),
    runbook_runs_wrong,
    ledger_ok: r.ledger_ok,
    wall_s: r.wall_s,
    ledger_reads: r.watch.reads,
    ledger_events: Object.fromEntries([...r.watch.types].sort((a, b) => b[1] - a[1])),
    service_vm_hwm_mb: r.vm,
    clean,
  };
}

function report(results: RunResult[], started: Date, o: Options, mysqlSkipped: boolean): void {
  const checks: Check[] = results.map((r) => ({
    engine: r.engine,
    what: 'p99 alert arrival → action.executed, less the debounce (ms)',
    value: r.latency_ms?.p99 ?? -1,
    target: `< ${TARGET_P99_MS}`,
    pass: r.clean && r.latency_ms !== null && r.latency_ms.p99 < TARGET_P99_MS,
  }));
  const f = (x: Figures | null, k: keyof Figures) => (x === null ? '' : String(x[k]));
  const rows: string[][] = [['engine', 'episodes', 'executed', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'target', 'result']];
  results.forEach((r, i) =>
    rows.push([
      r.engine,
      `${r.episodes}, waves of ${o.wave}`,
      String(r.executed),
      f(r.latency_ms, 'p50'),
      f(r.latency_ms, 'p90'),
      f(r.latency_ms, 'p99'),
      f(r.latency_ms, 'max'),
      `p99 ${checks[i]!.target} ms`,
      checks[i]!.pass ? 'PASS' : r.clean ? 'FAIL' : 'FAIL (not clean)',
    ]),
  );
  const out: string[] = ['', heading('Acting', started), '', table(rows), ''];
  for (const r of results) {
    const tag = r.engine;
    out.push(
      `${tag}: ${r.episodes} episodes in waves of ${o.wave} over ${o.services} services, debounce ${o.debounceS} s, in ${r.wall_s} s; load average before ${r.load_before}, after ${r.load_after}; service peak RSS ${r.service_vm_hwm_mb ?? '?'} MB`,
    );
    out.push(
      `${tag}: each step p50/p99 (ms): ${Object.entries(r.stages)
        .map(([k, v]) => `${k} ${v === null ? '–' : `${v.p50}/${v.p99}`}`)
        .join(', ')}`,
    );
    const events = Object.values(r.ledger_events).reduce((a, b) => a + b, 0);
    out.push(
      `${tag}: ${events} ledger events while the waves ran (${Math.round(events / Math.max(1, r.episodes))} per episode); most: ${Object.entries(
        r.ledger_events,
      )
        .slice(0, 6)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
    if (!r.ledger_ok) out.push(`${tag}: GET /v1/ledger/verify is NOT ok`);
    for (const n of r.not_executed.slice(0, 5)) out.push(`${tag}: not executed: ${n.service}: ${n.end}${n.why === null ? '' : ` (${n.why})`}`);
    if (r.not_executed.length > 5) out.push(`${tag}: … ${r.not_executed.length - 5} more not executed`);
    for (const w of r.runbook_runs_wrong.slice(0, 5)) out.push(`${tag}: runbook calls: ${w}`);
  }
  const summary = { ...machine('act', started), options: o, target_p99_ms: TARGET_P99_MS, results, checks, all_pass: checks.every((c) => c.pass) };
  printReport(out, checks, mysqlSkipped, summary);
}

async function main(): Promise<void> {
  const o: Options = {
    episodes: count('episodes', 'BENCH_EPISODES', 100),
    services: count('services', 'BENCH_SERVICES', 100),
    wave: count('wave', 'BENCH_WAVE', 10),
    debounceS: Number(option('debounce', 'BENCH_DEBOUNCE') ?? '1'),
    timeoutS: count('timeout', 'BENCH_TIMEOUT', 60),
  };
  if (!Number.isInteger(o.debounceS) || o.debounceS < 0 || o.debounceS > 60) throw new Error('--debounce must be a whole number of seconds from 0 to 60');
  if (o.wave > o.services) throw new Error('--wave cannot exceed --services: one open episode per service');
  if (o.services > 250) throw new Error('--services at most 250 (the benchmark licence)');
  const { engines, serverUrl, mysqlSkipped } = enginesToRun();
  const started = new Date();
  process.stderr.write(
    `act benchmark: ${engines.join(' + ')}; ${o.episodes} episodes, waves of ${o.wave}, ${o.services} services, debounce ${o.debounceS} s\n`,
  );
  const peer = await startPeer(RUNBOOK_TOKEN);
  const results: RunResult[] = [];
  try {
    for (const engine of engines) results.push(await benchRun(engine, serverUrl, peer, o));
  } finally {
    await peer.close();
  }
  report(results, started, o, mysqlSkipped);
}

await runBenchmark('act', main);
