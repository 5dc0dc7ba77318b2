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
 *   3. the service's peak RSS (VmHWM of /proc/<pid>/status) at the end.
 * Every response must be a 202: non-202 answers, errors and timeouts are counted, and a phase with
 * any is reported as such (never PASS). The service is killed in every case, also on Ctrl-C.
 *
 * Flags (or env): --duration S (BENCH_DURATION, 15), --connections N (BENCH_CONNECTIONS, 32),
 * --batch-connections N (BENCH_BATCH_CONNECTIONS, 8), --pool N (BENCH_POOL, 5000),
 * --only sqlite|mysql (BENCH_ONLY), --profile (BENCH_PROFILE=1: run the service with --cpu-prof
 * and print its top self-time functions; figures taken under the profiler are slower).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { signedMessage, type Licence } from '../../host/licence/licence.ts';
import { closingLines, count, cpuModel, type Check, createStore, enginesToRun, mb, runBenchmark, running, table, type Engine } from './common.ts';

const ADMIN_TOKEN = `bench-admin-${randomBytes(16).toString('hex')}`;
const INGEST_TOKEN = `bench-ingest-${randomBytes(16).toString('hex')}`;
const SECRET_KEY = 'intake-benchmark-secret-key-0123456789abcdef';
const HOST = '127.0.0.1';
const BATCH = 100;
const BATCH_POOL = 20_000;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const TARGETS = {
  sqlite: { single: 4_000, p99: null as number | null, batchAlerts: 30_000 },
  mysql: { single: 1_500, p99: 200 as number | null, batchAlerts: 30_000 },
} as const;


// ------------------------------------------------------------------ autocannon (no bundled types)

interface AcHistogram {
  average: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}
interface AcResult {
  duration: number;
  requests: AcHistogram & { total: number };
  latency: AcHistogram;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodeStats?: Record<string, { count: number }>;
}
interface AcRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (req: AcRequest, context: Record<string, unknown>) => AcRequest;
}
interface AcInstance extends PromiseLike<AcResult> {
  stop(): void;
}
type Autocannon = (opts: {
  url: string;
  connections: number;
  duration: number;
  pipelining?: number;
  timeout?: number;
  requests: AcRequest[];
}) => AcInstance;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

// ------------------------------------------------------------------ helpers

function flag(name: string, envName: string): boolean {
  return process.argv.slice(2).includes(`--${name}`) || ['1', 'true', 'yes'].includes(process.env[envName]?.trim() ?? '');
}

function procStatusMb(pid: number, field: 'VmHWM' | 'VmRSS'): number | null {
  try {
    const kb = new RegExp(`${field}:\\s+(\\d+)\\s*kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : mb(Number(kb) * 1024);
  } catch {
    return null;
  }
}

function loadAverage(): string {
  return os.loadavg().map((l) => l.toFixed(2)).join(' ');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, HOST, () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

// ------------------------------------------------------------------ bodies

const vendor = (() => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
})();

function licence(): Licence {
  const unsigned: Omit<Licence, 'signature'> = {
    customer: 'Benchmark Bank',
    tier: 'enterprise',
    services: 250,
    installs: 10,
    features: ['keychain'],
    issued_at: new Date(Date.now() - 86_400_000).toISOString(),
    expires_at: new Date(Date.now() + 365 * 86_400_000).toISOString(),
    grace_days: 14,
  };
  return { ...unsigned, signature: sign(null, Buffer.from(signedMessage(unsigned), 'utf8'), vendor.privateKey).toString('base64') };
}

/** One Alertmanager v4 alert; `n` picks its fingerprint (and labels) out of the pool. */
function alert(prefix: string, n: number) {
  const labels = { alertname: `BenchAlert${n % 50}`, instance: `node-${n}.bank.example:9100`, job: 'node', service: `svc-${n % 20}`, severity: n % 10 === 0 ? 'critical' : 'warning' };
  return {
    status: 'firing',
    labels,
    annotations: { summary: `Benchmark alert ${n} on node-${n}`, description: 'intake benchmark' },
    startsAt: '2026-11-22T06:00:00.000Z',
    endsAt: '0001-01-01T00:00:00Z',
    generatorURL: `http://prometheus.bank.example:9090/graph?g0.expr=up%3D%3D0&n=${n}`,
    fingerprint: `${prefix}${n.toString(16).padStart(14, '0')}`,
  };
}

function envelope(alerts: ReturnType<typeof alert>[]): string {
  const first = alerts[0]!;
  return JSON.stringify({
    receiver: 'oncall',
    status: 'firing',
    alerts,
    groupLabels: { alertname: first.labels.alertname },
    commonLabels: alerts.length === 1 ? first.labels : { job: 'node' },
    commonAnnotations: alerts.length === 1 ? first.annotations : {},
    externalURL: 'http://alertmanager.bank.example:9093',
    version: '4',
    groupKey: `{}:{alertname="${first.labels.alertname}"}`,
    truncatedAlerts: 0,
  });
}

// ------------------------------------------------------------------ service (child process)

interface Service {
  child: ChildProcess;
  base: string;
  output: () => string;
}


async function startService(dataDir: string, databaseUrl: string | null, profileDir: string | null): Promise<Service> {
  const port = await freePort();
  const env: Record<string, string | undefined> = {
    ...process.env,
    SERVICE_DATA_DIR: dataDir,
    SERVICE_DATABASE_URL: databaseUrl ?? undefined,
    SERVICE_PORT: String(port),
    SERVICE_HOST: HOST,
    SERVICE_ADMIN_TOKEN: ADMIN_TOKEN,
    SERVICE_INGEST_TOKEN: INGEST_TOKEN,
    SERVICE_SECRET_KEY: SECRET_KEY,
    SERVICE_LICENCE_PUBKEY: vendor.publicKeyPem,
    SERVICE_LOG_LEVEL: 'warn',
  };
  if (databaseUrl === null) delete env.SERVICE_DATABASE_URL;
  const args = [...(profileDir === null ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]), path.join(ROOT, 'host/main.ts')];
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let out = '';
  const keep = (c: Buffer) => {
    out += c.toString('utf8');
    if (out.length > 20_000) out = out.slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const base = `http://${HOST}:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the service ended at start-up: ${out.trim()}`);
    if (out.includes('Console and API on')) break;
    if (Date.now() > deadline) throw new Error(`the service did not start within 30 s: ${out.trim()}`);
    await sleep(50);
  }
  return { child, base, output: () => out };
}

/** SIGTERM (so that a CPU profile is written), SIGKILL after 10 s. */
async function stopService(s: Service): Promise<void> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  const ended = new Promise<void>((resolve) => s.child.once('exit', () => resolve()));
  s.child.kill('SIGTERM');
  const timer = setTimeout(() => s.child.kill('SIGKILL'), 10_000);
  await ended;
  clearTimeout(timer);
}

async function call(base: string, method: string, urlPath: string, token: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(base + urlPath, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: text === '' ? null : JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

async function makeOperating(base: string): Promise<void> {
  const lic = await call(base, 'POST', '/v1/licence', ADMIN_TOKEN, { licence: licence() });
  if (lic.status !== 200) throw new Error(`licence install failed: ${lic.status} ${JSON.stringify(lic.body)}`);
  const boot = await call(base, 'POST', '/v1/auth/bootstrap', ADMIN_TOKEN, { email: 'owner@bank.example', name: 'Benchmark Owner' });
  if (boot.status !== 201) throw new Error(`bootstrap failed: ${boot.status} ${JSON.stringify(boot.body)}`);
  const probe = await call(base, 'POST', '/v1/alerts/alertmanager', INGEST_TOKEN, JSON.parse(envelope([alert('ff', 0)])));
  if (probe.status !== 202) throw new Error(`a first push was not accepted: ${probe.status} ${JSON.stringify(probe.body)}`);
}

// ------------------------------------------------------------------ stores

// ------------------------------------------------------------------ load

interface Phase {
  pushes: number;
  alerts: number;
  seconds: number;
  pushes_per_s: number;
  alerts_per_s: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  max_ms: number;
  connections: number;
  ok_202: number;
  non_202: number;
  errors: number;
  timeouts: number;
  /** Answers by HTTP status. */
  statuses: Record<string, number>;
  clean: boolean;
}

async function drive(base: string, bodies: string[], perBody: number, connections: number, duration: number): Promise<Phase> {
  let next = 0;
  const result = await autocannon({
    url: `${base}/v1/alerts/alertmanager`,
    connections,
    duration,
    timeout: 10,
    requests: [
      {
        method: 'POST',
        headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length]! }),
      },
    ],
  });
  const stats = result.statusCodeStats ?? {};
  const ok = stats['202']?.count ?? 0;
  const answered = Object.values(stats).reduce((s, c) => s + c.count, 0);
  const pushes = ok;
  return {
    pushes,
    alerts: pushes * perBody,
    seconds: result.duration,
    pushes_per_s: Math.round(pushes / result.duration),
    alerts_per_s: Math.round((pushes * perBody) / result.duration),
    p50_ms: result.latency.p50,
    p90_ms: result.latency.p90,
    p99_ms: result.latency.p99,
    max_ms: result.latency.max,
    connections,
    ok_202: ok,
    non_202: answered - ok,
    errors: result.errors,
    timeouts: result.timeouts,
    statuses: Object.fromEntries(Object.entries(stats).map(([code, c]) => [code, c.count])),
    clean: answered === ok && result.errors === 0 && result.timeouts === 0 && ok > 0,
  };
}

// ------------------------------------------------------------------ profile

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

/** The top self-time functions of the service's CPU profile. */
function topOfProfile(dir: string, n = 25): string[] {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (file === undefined) return ['(no .cpuprofile written)'];
  const prof = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] };
  const byId = new Map(prof.nodes.map((nd) => [nd.id, nd]));
  const self = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < prof.samples.length; i++) {
    const nd = byId.get(prof.samples[i]!);
    if (nd === undefined) continue;
    const dt = prof.timeDeltas[i] ?? 0;
    total += dt;
    const url = nd.callFrame.url.replace(/^file:\/\//, '').replace(ROOT, '').replace(/.*node_modules\//, 'nm/');
    const key = `${nd.callFrame.functionName || '(anonymous)'} ${url === '' ? '' : `${url}:${nd.callFrame.lineNumber + 1}`}`.trim();
    self.set(key, (self.get(key) ?? 0) + dt);
  }
  const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);
  return [`CPU profile ${file}: ${(total / 1e6).toFixed(1)} s sampled; top self time:`, ...rows.map(([k, us]) => `  ${((us / total) * 100).toFixed(1).padStart(5)} %  ${k}`)];
}

// ------------------------------------------------------------------ one engine

interface EngineResult {
  engine: Engine;
  load_before: string;
  single: Phase;
  batch: Phase;
  batch_size: number;
  pool: number;
  service_vm_hwm_mb: number | null;
  service_rss_end_mb: number | null;
  profile: string[] | null;
}

async function benchEngine(engine: Engine, serverUrl: string | null, o: { duration: number; connections: number; batchConnections: number; pool: number; profile: boolean }): Promise<EngineResult> {
  const log = (s: string) => process.stderr.write(`[${engine}] ${s}\n`);
  const store = await createStore(engine, serverUrl, 'intake');
  const profileDir = o.profile ? mkdtempSync(path.join(os.tmpdir(), 'oncall-bench-prof-')) : null;
  let service: Service | null = null;
  try {
    const load_before = loadAverage();
    log(`load average before: ${load_before}`);
    service = await startService(store.dataDir, store.databaseUrl, profileDir);
    await makeOperating(service.base);
    const singles = Array.from({ length: o.pool }, (_, n) => envelope([alert('a1', n)]));
    const batches = Array.from({ length: BATCH_POOL / BATCH }, (_, b) => envelope(Array.from({ length: BATCH }, (_, i) => alert('b2', b * BATCH + i))));
    log(`single-alert pushes: ${o.connections} connections, ${o.duration} s, a pool of ${o.pool} fingerprints…`);
    const single = await drive(service.base, singles, 1, o.connections, o.duration);
    log(`  ${single.pushes_per_s}/s, p50 ${single.p50_ms} ms, p99 ${single.p99_ms} ms${single.clean ? '' : `, NOT CLEAN: ${single.non_202} non-202, ${single.errors} errors, ${single.timeouts} timeouts`}`);
    log(`batches of ${BATCH}: ${o.batchConnections} connections, ${o.duration} s, a pool of ${BATCH_POOL} fingerprints…`);
    const batch = await drive(service.base, batches, BATCH, o.batchConnections, o.duration);
    log(`  ${batch.alerts_per_s} alerts/s, p99 ${batch.p99_ms} ms${batch.clean ? '' : `, NOT CLEAN: ${batch.non_202} non-202, ${batch.errors} errors, ${batch.timeouts} timeouts`}`);
    if (!single.clean || !batch.clean) {
      const lines = service.output().trim().split('\n');
      log(`answers by status: single ${JSON.stringify(single.statuses)}, batch ${JSON.stringify(batch.statuses)}; the service's last log lines:\n${lines.slice(-3).join('\n').slice(0, 3000)}`);
    }
    const pid = service.child.pid!;
    const service_vm_hwm_mb = procStatusMb(pid, 'VmHWM');
    const service_rss_end_mb = procStatusMb(pid, 'VmRSS');
    await stopService(service);
    const profile = profileDir === null ? null : topOfProfile(profileDir);
    return { engine, load_before, single, batch, batch_size: BATCH, pool: o.pool, service_vm_hwm_mb, service_rss_end_mb, profile };
  } catch (e) {
    if (service !== null) process.stderr.write(`[${engine}] service output:\n${service.output()}\n`);
    throw e;
  } finally {
    if (service !== null) await stopService(service);
    if (profileDir !== null) rmSync(profileDir, { recursive: true, force: true });
    await store.cleanup();
  }
}

// ------------------------------------------------------------------ report

function checks(r: EngineResult): Check[] {
  const t = TARGETS[r.engine];
  const out: Check[] = [
    { engine: r.engine, what: 'single-alert pushes/s', value: r.single.pushes_per_s, target: `≥ ${t.single.toLocaleString('en')}`, pass: r.single.clean && r.single.pushes_per_s >= t.single },
  ];
  if (t.p99 !== null) out.push({ engine: r.engine, what: 'single-alert push p99 (ms)', value: r.single.p99_ms, target: `< ${t.p99}`, pass: r.single.clean && r.single.p99_ms < t.p99 });
  out.push({ engine: r.engine, what: `alerts/s in batches of ${r.batch_size}`, value: r.batch.alerts_per_s, target: `≥ ${t.batchAlerts.toLocaleString('en')}`, pass: r.batch.clean && r.batch.alerts_per_s >= t.batchAlerts });
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
    const p99 = c.find((x) => x.what.includes('p99'));
    const batchCheck = c[c.length - 1]!;
    rows.push([r.engine, `single alert, ${r.single.connections} conns`, fmt(r.single.pushes), fmt(r.single.pushes_per_s), fmt(r.single.alerts_per_s), String(r.single.p50_ms), String(r.single.p99_ms), state(r.single), c[0]!.target + (p99 ? `, p99 ${p99.target}` : ''), p99 ? (c[0]!.pass && p99.pass ? 'PASS' : 'MISS') : verdict(c[0])]);
    rows.push([r.engine, `batches of ${r.batch_size}, ${r.batch.connections} conns`, fmt(r.batch.pushes), fmt(r.batch.pushes_per_s), fmt(r.batch.alerts_per_s), String(r.batch.p50_ms), String(r.batch.p99_ms), state(r.batch), batchCheck.target + ' alerts/s', verdict(batchCheck)]);
    rows.push([r.engine, '  service peak RSS (VmHWM) MB', '', '', '', '', '', '', String(r.service_vm_hwm_mb ?? '?'), '']);
  }
  const summary = {
    bench: 'intake',
    at: started.toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    cpu: cpuModel(),
    mem_gb: Math.round(os.totalmem() / 1024 ** 3),
    duration_s: duration,
    results: results.map(({ profile: _p, ...r }) => r),
    checks: all,
    all_pass: all.every((c) => c.pass),
  };
  const out: string[] = ['', `Intake benchmark ${started.toISOString()}: Node ${process.version}, ${os.cpus().length} × ${cpuModel()}`, '', table(rows), ''];
  for (const r of results) {
    out.push(`${r.engine}: load average before ${r.load_before}; service RSS at the end ${r.service_rss_end_mb ?? '?'} MB, peak ${r.service_vm_hwm_mb ?? '?'} MB`);
    for (const p of [r.single, r.batch]) if (!p.clean) out.push(`${r.engine}: a phase had errors (${state(p)}): its figures do not count`);
    if (r.profile !== null) out.push(...r.profile.map((l) => `${r.engine}: ${l}`));
  }
  out.push(...closingLines(all, mysqlSkipped, summary));
  process.stdout.write(out.join('\n') + '\n');
}

async function main(): Promise<void> {
  const duration = count('duration', 'BENCH_DURATION', 15);
  const connections = count('connections', 'BENCH_CONNECTIONS', 32);
  const batchConnections = count('batch-connections', 'BENCH_BATCH_CONNECTIONS', 8);
  const pool = count('pool', 'BENCH_POOL', 5_000);
  const profile = flag('profile', 'BENCH_PROFILE');
  const { engines, serverUrl, mysqlSkipped } = enginesToRun();

  const started = new Date();
  process.stderr.write(`intake benchmark: ${engines.join(' + ')}; ${duration} s per phase${profile ? ', under --cpu-prof' : ''}\n`);
  const results: EngineResult[] = [];
  for (const engine of engines) results.push(await benchEngine(engine, serverUrl, { duration, connections, batchConnections, pool, profile }));
  report(results, started, duration, mysqlSkipped);
}

await runBenchmark('intake', main);
