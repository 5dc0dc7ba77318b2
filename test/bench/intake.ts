/**
 * `npm run bench:intake`: alert intake throughput of the real service (`node host/main.ts`),
 * driven over loopback with autocannon, on SQLite and (when SERVICE_DATABASE_URL names a
 * MySQL/MariaDB server) MySQL.
 *
 * Per engine, on a fresh data dir / throwaway `bench_<random>` database, one service process:
 *   0. brought to `operating` over the API (a licence signed by a vendor key made here, whose
 *      public half is SERVICE_LICENCE_PUBKEY, then POST /v1/auth/bootstrap);
 *   1. single-alert pushes to POST /v1/alerts/alertmanager: 32 connections, 15 s, each body one
 *      Alertmanager v4 alert picked from a pool of 5,000 fingerprints (new ones fire, seen ones
 *      refresh);
 *   2. batch pushes of 100 alerts each (a pool of 20,000 other fingerprints), 8 connections, 15 s;
 *   3. episode search: 100,000 episodes (1–3 alerts and a few labels each, ~200 services, ~300
 *      alert names, opened over the last 90 days, lasting seconds to days) seeded straight into
 *      the service's database, then GET /v1/episodes?query=… (default page of 50) from
 *      6 connections, each request one of several 3-term queries in turn; every answer must be a
 *      200 and p99 under 50 ms. Each query's page size and sequential latency are printed, and
 *      with --explain (or when the target is missed) its plan (EXPLAIN [QUERY PLAN]);
 *   4. the service's peak RSS (VmHWM of /proc/<pid>/status) at the end.
 * Every response must be a 202: non-202 answers, errors and timeouts are counted, and a phase with
 * any is reported as such (never PASS). The service is killed in every case, also on Ctrl-C.
 *
 * Flags (or env): --duration S (BENCH_DURATION, 15), --connections N (BENCH_CONNECTIONS, 32),
 * --batch-connections N (BENCH_BATCH_CONNECTIONS, 8), --pool N (BENCH_POOL, 5000),
 * --only sqlite|mysql (BENCH_ONLY), --profile (BENCH_PROFILE=1: run the service with --cpu-prof
 * and print its top self-time functions; figures taken under the profiler are slower),
 * --episodes N (BENCH_EPISODES, 100000), --search-connections N (BENCH_SEARCH_CONNECTIONS, 2),
 * --explain (BENCH_EXPLAIN=1: print the search queries' plans even when the target is met).
 */
import { randomBytes } from 'node:crypto';
import { count, type Check, enginesToRun, flag, heading, machine, median, round1, printReport, runBenchmark, table, type Engine } from './common.ts';
import { alert, drive, envelope, type Phase, SINGLE_PUSH_TARGET } from './alertmanager-load.ts';
import { EPISODE_QUERIES, explainQueries, seedEpisodes, type SeedResult } from './episodes.ts';
import { autocannon, call, expect, loadFigures, type LoadFigures, loadOptions, makeOperating, stopAndMeasure, topOfProfile, withService } from './service.ts';

const ADMIN_TOKEN = `bench-admin-${randomBytes(16).toString('hex')}`;
const INGEST_TOKEN = `bench-ingest-${randomBytes(16).toString('hex')}`;
const SECRET_KEY = 'intake-benchmark-secret-key-0123456789abcdef';
const BATCH = 100;
const BATCH_POOL = 20_000;

const TARGETS = {
  sqlite: { single: SINGLE_PUSH_TARGET.sqlite, p99: null as number | null, batchAlerts: 30_000, searchP99: 50 },
  mysql: { single: SINGLE_PUSH_TARGET.mysql, p99: 200 as number | null, batchAlerts: 30_000, searchP99: 50 },
} as const;

/** The episode list under 3-term queries, over a seeded history. */
type SearchPhase = {
  episodes_seeded: number;
  seed: SeedResult;
  requests: number;
  requests_per_s: number;
  seconds: number;
} & LoadFigures<'200'> & {
    /** Per query, alone and one request at a time: what one page held, and how long it took. */
    queries: { query: string; returned: number; more: boolean; seq_p50_ms: number; seq_max_ms: number }[];
    plans: string[] | null;
  };

const episodesPath = (query: string) => `/v1/episodes?query=${encodeURIComponent(query)}`;

async function searchPhase(
  base: string,
  store: { dataDir: string; databaseUrl: string | null },
  o: { episodes: number; connections: number; duration: number; explain: boolean; targetP99: number },
  log: (s: string) => void,
): Promise<SearchPhase> {
  log(`seeding ${o.episodes.toLocaleString('en')} episodes into the service's database…`);
  const seed = await seedEpisodes(store, o.episodes, Date.now());
  log(
    `  ${seed.episodes.toLocaleString('en')} episodes (${seed.open} open), ${seed.alerts.toLocaleString('en')} alerts, ${seed.data.toLocaleString('en')} data rows in ${seed.seconds} s`,
  );
  // Each query alone: its page (sanity: not empty) and sequential latency; this also warms up.
  const queries: SearchPhase['queries'] = [];
  for (const query of EPISODE_QUERIES) {
    const times: number[] = [];
    let returned = -1;
    let more = false;
    for (let i = 0; i < 11; i++) {
      const t0 = performance.now();
      const res = await call(base, 'GET', episodesPath(query), ADMIN_TOKEN);
      times.push(performance.now() - t0);
      const body = await expect<{ episodes: unknown[]; more: boolean }>(query, 200, res);
      returned = body.episodes.length;
      more = body.more;
    }
    times.shift();
    const q = { query, returned, more, seq_p50_ms: round1(median(times)), seq_max_ms: round1(Math.max(...times)) };
    queries.push(q);
    log(
      `  ${query.padEnd(52)} ${String(returned).padStart(3)}${more ? '+' : ' '} episodes, alone p50 ${q.seq_p50_ms} ms, max ${q.seq_max_ms} ms${returned === 0 ? '  (EMPTY)' : ''}`,
    );
  }
  log(`episode list, ${EPISODE_QUERIES.length} queries in turn: ${o.connections} connections, ${o.duration} s…`);
  let next = 0;
  const result = await autocannon({
    url: base,
    connections: o.connections,
    duration: o.duration,
    timeout: 10,
    requests: [
      {
        method: 'GET',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        setupRequest: (req) => ({ ...req, path: episodesPath(EPISODE_QUERIES[next++ % EPISODE_QUERIES.length]!) }),
      },
    ],
  });
  const figures = loadFigures(result, o.connections, '200');
  const phase: SearchPhase = {
    episodes_seeded: seed.episodes,
    seed,
    requests: figures.ok_200,
    requests_per_s: Math.round(figures.ok_200 / result.duration),
    seconds: result.duration,
    ...figures,
    clean: figures.clean && queries.every((q) => q.returned > 0),
    queries,
    plans: null,
  };
  log(
    `  ${phase.requests_per_s}/s, p50 ${phase.p50_ms} ms, p99 ${phase.p99_ms} ms, max ${phase.max_ms} ms${phase.clean ? '' : `, NOT CLEAN: ${phase.non_200} non-200, ${phase.errors} errors, ${phase.timeouts} timeouts`}`,
  );
  if (o.explain || phase.p99_ms >= o.targetP99) {
    log('query plans (each query as EpisodeRepo.list builds it):');
    phase.plans = await explainQueries(store, EPISODE_QUERIES, Date.now());
    for (const l of phase.plans) log(`  ${l}`);
  }
  return phase;
}

// ------------------------------------------------------------------ one engine

interface EngineResult {
  engine: Engine;
  load_before: string;
  single: Phase;
  batch: Phase;
  search: SearchPhase;
  batch_size: number;
  pool: number;
  service_vm_hwm_mb: number | null;
  service_rss_end_mb: number | null;
  profile: string[] | null;
}

async function benchEngine(
  engine: Engine,
  serverUrl: string | null,
  o: {
    duration: number;
    connections: number;
    batchConnections: number;
    pool: number;
    profile: boolean;
    episodes: number;
    searchConnections: number;
    explain: boolean;
  },
): Promise<EngineResult> {
  return withService(
    engine,
    serverUrl,
    'intake',
    { adminToken: ADMIN_TOKEN, ingestToken: INGEST_TOKEN, secretKey: SECRET_KEY, profile: o.profile },
    async ({ service, store, log, load_before, profileDir }) => {
      await makeOperating(service.base, ADMIN_TOKEN);
      await expect('a first push', 202, call(service.base, 'POST', '/v1/alerts/alertmanager', INGEST_TOKEN, JSON.parse(envelope([alert('ff', 0)]))));
      const singles = Array.from({ length: o.pool }, (_, n) => envelope([alert('a1', n)]));
      const batches = Array.from({ length: BATCH_POOL / BATCH }, (_, b) => envelope(Array.from({ length: BATCH }, (_, i) => alert('b2', b * BATCH + i))));
      log(`single-alert pushes: ${o.connections} connections, ${o.duration} s, a pool of ${o.pool} fingerprints…`);
      const single = await drive(service.base, INGEST_TOKEN, singles, 1, o.connections, o.duration);
      log(
        `  ${single.pushes_per_s}/s, p50 ${single.p50_ms} ms, p99 ${single.p99_ms} ms${single.clean ? '' : `, NOT CLEAN: ${single.non_202} non-202, ${single.errors} errors, ${single.timeouts} timeouts`}`,
      );
      log(`batches of ${BATCH}: ${o.batchConnections} connections, ${o.duration} s, a pool of ${BATCH_POOL} fingerprints…`);
      const batch = await drive(service.base, INGEST_TOKEN, batches, BATCH, o.batchConnections, o.duration);
      log(
        `  ${batch.alerts_per_s} alerts/s, p99 ${batch.p99_ms} ms${batch.clean ? '' : `, NOT CLEAN: ${batch.non_202} non-202, ${batch.errors} errors, ${batch.timeouts} timeouts`}`,
      );
      if (!single.clean || !batch.clean)
        log(
          `answers by status: single ${JSON.stringify(single.statuses)}, batch ${JSON.stringify(batch.statuses)}; the service's last log lines:\n${service.tail()}`,
        );
      const search = await searchPhase(
        service.base,
        store,
        { episodes: o.episodes, connections: o.searchConnections, duration: o.duration, explain: o.explain, targetP99: TARGETS[engine].searchP99 },
        log,
      );
      if (!search.clean) log(`episode list answers by status: ${JSON.stringify(search.statuses)}; the service's last log lines:\n${service.tail()}`);
      const memory = await stopAndMeasure(service);
      const profile = profileDir === null ? null : topOfProfile(profileDir);
      return { engine, load_before, single, batch, search, batch_size: BATCH, pool: o.pool, ...memory, profile };
    },
  );
}

// ------------------------------------------------------------------ report

function checks(r: EngineResult): Check[] {
  const t = TARGETS[r.engine];
  const out: Check[] = [
    {
      engine: r.engine,
      what: 'single-alert pushes/s',
      value: r.single.pushes_per_s,
      target: `≥ ${t.single.toLocaleString('en')}`,
      pass: r.single.clean && r.single.pushes_per_s >= t.single,
    },
  ];
  if (t.p99 !== null)
    out.push({
      engine: r.engine,
      what: 'single-alert push p99 (ms)',
      value: r.single.p99_ms,
      target: `< ${t.p99}`,
      pass: r.single.clean && r.single.p99_ms < t.p99,
    });
  out.push({
    engine: r.engine,
    what: `alerts/s in batches of ${r.batch_size}`,
    value: r.batch.alerts_per_s,
    target: `≥ ${t.batchAlerts.toLocaleString('en')}`,
    pass: r.batch.clean && r.batch.alerts_per_s >= t.batchAlerts,
  });
  out.push({
    engine: r.engine,
    what: `episode list p99 (ms), 3-term queries over ${r.search.episodes_seeded.toLocaleString('en')} episodes`,
    value: r.search.p99_ms,
    target: `< ${t.searchP99}`,
    pass: r.search.clean && r.search.p99_ms < t.searchP99,
  });
  return out;
}

function report(results: EngineResult[], started: Date, duration: number, mysqlSkipped: boolean): void {
  const fmt = (n: number) => n.toLocaleString('en');
  const verdict = (c: Check | undefined) => (c === undefined ? '' : c.pass ? 'PASS' : 'MISS');
  const state = (p: Phase) => (p.clean ? 'all 202' : `${p.non_202} non-202, ${p.errors} err, ${p.timeouts} t/o`);
  const rows: string[][] = [['engine', 'phase', 'pushes', 'pushes/s', 'alerts/s', 'p50 ms', 'p99 ms', 'answers', 'target', 'result']];
  const all: Check[] = [];
  for (const r of results) {
    const c = checks(r);
    all.push(...c);
    const p99 = c.find((x) => x.what.startsWith('single-alert push p99'));
    const batchCheck = c[c.length - 2]!;
    const searchCheck = c[c.length - 1]!;
    rows.push([
      r.engine,
      `single alert, ${r.single.connections} conns`,
      fmt(r.single.pushes),
      fmt(r.single.pushes_per_s),
      fmt(r.single.alerts_per_s),
      String(r.single.p50_ms),
      String(r.single.p99_ms),
      state(r.single),
      c[0]!.target + (p99 ? `, p99 ${p99.target}` : ''),
      p99 ? (c[0]!.pass && p99.pass ? 'PASS' : 'MISS') : verdict(c[0]),
    ]);
    rows.push([
      r.engine,
      `batches of ${r.batch_size}, ${r.batch.connections} conns`,
      fmt(r.batch.pushes),
      fmt(r.batch.pushes_per_s),
      fmt(r.batch.alerts_per_s),
      String(r.batch.p50_ms),
      String(r.batch.p99_ms),
      state(r.batch),
      batchCheck.target + ' alerts/s',
      verdict(batchCheck),
    ]);
    const s = r.search;
    rows.push([
      r.engine,
      `episode list, 3-term queries, ${s.connections} conns`,
      fmt(s.requests),
      fmt(s.requests_per_s),
      '',
      String(s.p50_ms),
      String(s.p99_ms),
      s.clean ? 'all 200' : `${s.non_200} non-200, ${s.errors} err, ${s.timeouts} t/o`,
      `p99 ${searchCheck.target} ms (max ${s.max_ms})`,
      verdict(searchCheck),
    ]);
    rows.push([r.engine, '  service peak RSS (VmHWM) MB', '', '', '', '', '', '', String(r.service_vm_hwm_mb ?? '?'), '']);
  }
  const summary = {
    ...machine('intake', started),
    duration_s: duration,
    results: results.map(({ profile: _p, search: { plans: _plans, ...search }, ...r }) => ({ ...r, search })),
    checks: all,
    all_pass: all.every((c) => c.pass),
  };
  const out: string[] = ['', heading('Intake', started), '', table(rows), ''];
  for (const r of results) {
    out.push(
      `${r.engine}: load average before ${r.load_before}; service RSS at the end ${r.service_rss_end_mb ?? '?'} MB, peak ${r.service_vm_hwm_mb ?? '?'} MB`,
    );
    for (const p of [r.single, r.batch]) if (!p.clean) out.push(`${r.engine}: a phase had errors (${state(p)}): its figures do not count`);
    if (!r.search.clean)
      out.push(
        `${r.engine}: the episode list had errors or an empty query (${r.search.non_200} non-200, ${r.search.errors} err, ${r.search.timeouts} t/o; pages ${r.search.queries.map((q) => q.returned).join('/')}): its figures do not count`,
      );
    out.push(
      `${r.engine}: episode list over ${r.search.seed.episodes.toLocaleString('en')} episodes (${r.search.seed.alerts.toLocaleString('en')} alerts, ${r.search.seed.data.toLocaleString('en')} data rows, seeded in ${r.search.seed.seconds} s); p50/p99/max ${r.search.p50_ms}/${r.search.p99_ms}/${r.search.max_ms} ms, ${r.search.requests_per_s} requests/s; each query alone:`,
    );
    for (const q of r.search.queries)
      out.push(
        `${r.engine}:   ${q.query.padEnd(52)} ${String(q.returned).padStart(3)}${q.more ? '+' : ' '} episodes  p50 ${q.seq_p50_ms} ms  max ${q.seq_max_ms} ms`,
      );
    if (r.profile !== null) out.push(...r.profile.map((l) => `${r.engine}: ${l}`));
  }
  printReport(out, all, mysqlSkipped, summary);
}

async function main(): Promise<void> {
  const { duration, connections, profile } = loadOptions();
  const batchConnections = count('batch-connections', 'BENCH_BATCH_CONNECTIONS', 8);
  const pool = count('pool', 'BENCH_POOL', 5_000);
  const episodes = count('episodes', 'BENCH_EPISODES', 100_000);
  const searchConnections = count('search-connections', 'BENCH_SEARCH_CONNECTIONS', 2);
  const explain = flag('explain', 'BENCH_EXPLAIN');
  const { engines, serverUrl, mysqlSkipped } = enginesToRun();

  const started = new Date();
  process.stderr.write(`intake benchmark: ${engines.join(' + ')}; ${duration} s per phase${profile ? ', under --cpu-prof' : ''}\n`);
  const results: EngineResult[] = [];
  for (const engine of engines)
    results.push(await benchEngine(engine, serverUrl, { duration, connections, batchConnections, pool, profile, episodes, searchConnections, explain }));
  report(results, started, duration, mysqlSkipped);
}

await runBenchmark('intake', main);
