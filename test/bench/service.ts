/**
 * The real service, for the benchmarks that drive it over HTTP (intake, auth): `node host/main.ts`
 * as a child process on a throwaway store and a free loopback port, brought to `operating` with a
 * licence signed by a vendor key made here (its public half is SERVICE_LICENCE_PUBKEY), loaded
 * with autocannon, stopped with SIGTERM (so that a CPU profile is written), SIGKILL after 10 s;
 * and the reading of that profile.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { signedMessage, type Licence } from '../../host/licence/licence.ts';
import { count, createStore, flag, loadAverage, procStatusMb, running, type Engine, type Store } from './common.ts';

const HOST = '127.0.0.1';
/** The repository's root: where the service runs, and what profile frames are named relative to. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

// ------------------------------------------------------------------ autocannon (no bundled types)

interface AcHistogram {
  average: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}
export interface AcResult {
  duration: number;
  requests: AcHistogram & { total: number };
  latency: AcHistogram;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodeStats?: Record<string, { count: number }>;
}
export interface AcRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (req: AcRequest, context: Record<string, unknown>) => AcRequest;
}
interface AcInstance extends PromiseLike<AcResult> {
  stop(): void;
}
type Autocannon = (opts: { url: string; connections: number; duration: number; pipelining?: number; timeout?: number; requests: AcRequest[] }) => AcInstance;
export const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

/** The flags of a load benchmark: --duration S (per phase), --connections N, --profile (run the service under --cpu-prof). */
export function loadOptions(): { duration: number; connections: number; profile: boolean } {
  return {
    duration: count('duration', 'BENCH_DURATION', 15),
    connections: count('connections', 'BENCH_CONNECTIONS', 32),
    profile: flag('profile', 'BENCH_PROFILE'),
  };
}

/** A load phase's latency and answers; every answer must have status `S` for the phase to be clean. */
export type LoadFigures<S extends string> = {
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  max_ms: number;
  connections: number;
} & { [K in `ok_${S}` | `non_${S}`]: number } & {
  errors: number;
  timeouts: number;
  /** Answers by HTTP status. */
  statuses: Record<string, number>;
  clean: boolean;
};

/** The figures of an autocannon run in which every answer should be a `want`. */
export function loadFigures<S extends string>(result: AcResult, connections: number, want: S): LoadFigures<S> {
  const stats = result.statusCodeStats ?? {};
  const ok = stats[want]?.count ?? 0;
  const answered = Object.values(stats).reduce((s, c) => s + c.count, 0);
  return {
    p50_ms: result.latency.p50,
    p90_ms: result.latency.p90,
    p99_ms: result.latency.p99,
    max_ms: result.latency.max,
    connections,
    [`ok_${want}`]: ok,
    [`non_${want}`]: answered - ok,
    errors: result.errors,
    timeouts: result.timeouts,
    statuses: Object.fromEntries(Object.entries(stats).map(([code, c]) => [code, c.count])),
    clean: answered === ok && result.errors === 0 && result.timeouts === 0 && ok > 0,
  } as LoadFigures<S>;
}

// ------------------------------------------------------------------ licence

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

// ------------------------------------------------------------------ the service process

/** The service's tokens and key (SERVICE_ADMIN_TOKEN, SERVICE_INGEST_TOKEN when given, SERVICE_SECRET_KEY). */
export interface Secrets {
  adminToken: string;
  ingestToken?: string;
  secretKey: string;
}

export interface Service {
  child: ChildProcess;
  base: string;
  /** What it wrote to stdout and stderr, the last 20,000 characters. */
  output: () => string;
  /** Its last 3 lines of output (at most 3,000 characters). */
  tail: () => string;
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

/** How the service is started: `node <args>` in `cwd`. */
export interface StartCommand {
  cwd: string;
  args: string[];
}
/** As `npm start` runs it: the checkout's TypeScript. */
const CHECKOUT: StartCommand = { cwd: ROOT, args: [path.join(ROOT, 'host/main.ts')] };

/**
 * `node host/main.ts` (or `start`) on `dataDir` (and `databaseUrl`), under --cpu-prof when
 * `profileDir` is given, with `extraEnv` over the rest of its environment; resolves once it listens.
 */
async function startService(
  dataDir: string,
  databaseUrl: string | null,
  profileDir: string | null,
  secrets: Secrets,
  extraEnv: Record<string, string> = {},
  bootS = 30,
  start: StartCommand = CHECKOUT,
): Promise<Service> {
  const port = await freePort();
  const env: Record<string, string | undefined> = {
    ...process.env,
    SERVICE_DATA_DIR: dataDir,
    SERVICE_DATABASE_URL: databaseUrl ?? undefined,
    SERVICE_PORT: String(port),
    SERVICE_HOST: HOST,
    SERVICE_ADMIN_TOKEN: secrets.adminToken,
    ...(secrets.ingestToken === undefined ? {} : { SERVICE_INGEST_TOKEN: secrets.ingestToken }),
    SERVICE_SECRET_KEY: secrets.secretKey,
    SERVICE_LICENCE_PUBKEY: vendor.publicKeyPem,
    SERVICE_LOG_LEVEL: 'warn',
    ...extraEnv,
  };
  if (databaseUrl === null) delete env.SERVICE_DATABASE_URL;
  const args = [...(profileDir === null ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]), ...start.args];
  const child = spawn(process.execPath, args, { cwd: start.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
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
  const deadline = Date.now() + bootS * 1000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the service ended at start-up: ${out.trim()}`);
    if (out.includes('Console and API on')) break;
    if (Date.now() > deadline) throw new Error(`the service did not start within ${bootS} s: ${out.trim()}`);
    await sleep(50);
  }
  return { child, base, output: () => out, tail: () => out.trim().split('\n').slice(-3).join('\n').slice(0, 3000) };
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

/** One engine's service, as `withService` hands it to a benchmark. */
export interface ServiceRun {
  service: Service;
  store: Store;
  /** Writes `[engine] line` to stderr. */
  log: (s: string) => void;
  /** The load average when the run started (before the service did). */
  load_before: string;
  /** The CPU profile's folder, when run under --cpu-prof. */
  profileDir: string | null;
}

/**
 * Runs `body` against a service of its own on a fresh store of `engine` (named `oncall-bench-<name>-…`),
 * under --cpu-prof when `profile`, with `env` added to its environment (such as
 * SERVICE_DEBOUNCE_S), waiting `bootS` (30) for it to listen, started as `start` says (the
 * checkout's `node host/main.ts` by default); prints the service's output if anything fails, and
 * always stops the service and removes the store and the profile.
 */
export async function withService<T>(
  engine: Engine,
  serverUrl: string | null,
  name: string,
  o: Secrets & { profile: boolean; env?: Record<string, string>; bootS?: number; start?: StartCommand },
  body: (run: ServiceRun) => Promise<T>,
): Promise<T> {
  const log = (s: string) => process.stderr.write(`[${engine}] ${s}\n`);
  const store = await createStore(engine, serverUrl, name);
  const profileDir = o.profile ? mkdtempSync(path.join(os.tmpdir(), 'oncall-bench-prof-')) : null;
  let service: Service | null = null;
  try {
    const load_before = loadAverage();
    log(`load average before: ${load_before}`);
    service = await startService(store.dataDir, store.databaseUrl, profileDir, o, o.env, o.bootS, o.start);
    return await body({ service, store, log, load_before, profileDir });
  } catch (e) {
    if (service !== null) process.stderr.write(`[${engine}] service output:\n${service.output()}\n`);
    throw e;
  } finally {
    if (service !== null) await stopService(service);
    if (profileDir !== null) {
      // BENCH_KEEP_PROFILE=1 leaves the .cpuprofile for a closer look (Chromium's DevTools, or a script).
      if (process.env.BENCH_KEEP_PROFILE === '1') log(`CPU profile kept in ${profileDir}`);
      else rmSync(profileDir, { recursive: true, force: true });
    }
    await store.cleanup();
  }
}

/** The service's peak RSS (VmHWM) and RSS now, then the service stopped (which writes its CPU profile). */
export async function stopAndMeasure(service: Service): Promise<{ service_vm_hwm_mb: number | null; service_rss_end_mb: number | null }> {
  const pid = service.child.pid!;
  const service_vm_hwm_mb = procStatusMb(pid, 'VmHWM');
  const service_rss_end_mb = procStatusMb(pid, 'VmRSS');
  await stopService(service);
  return { service_vm_hwm_mb, service_rss_end_mb };
}

// ------------------------------------------------------------------ the API

/** A request to the service; `token` goes in as a bearer, `body` as JSON. */
export async function call(base: string, method: string, urlPath: string, token: string | null, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(base + urlPath, {
    method,
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: text === '' ? null : JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

/** The answer's body when its status is `want`; otherwise throws `<what>: <status> <body>`. */
export async function expect<T>(what: string, want: number, p: { status: number; body: unknown } | Promise<{ status: number; body: unknown }>): Promise<T> {
  const res = await p;
  if (res.status !== want) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as T;
}

/** A new install to `operating`: the licence installed, then the owner bootstrapped (no mail provider). */
export async function makeOperating(base: string, adminToken: string): Promise<void> {
  await expect('licence install', 200, call(base, 'POST', '/v1/licence', adminToken, { licence: licence() }));
  await expect('bootstrap', 201, call(base, 'POST', '/v1/auth/bootstrap', adminToken, { email: 'owner@bank.example', name: 'Benchmark Owner' }));
}

// ------------------------------------------------------------------ CPU profile

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  file: string;
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The .cpuprofile the service wrote into `dir`; null when there is none. */
export function readCpuProfile(dir: string): CpuProfile | null {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (file === undefined) return null;
  return { file, ...(JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Omit<CpuProfile, 'file'>) };
}
export const NO_PROFILE = '(no .cpuprofile written)';

/** A frame as `function path:line`, the path relative to the repository (node_modules/ as nm/). */
export function frameName(nd: ProfileNode): string {
  const url = nd.callFrame.url
    .replace(/^file:\/\//, '')
    .replace(ROOT, '')
    .replace(/.*node_modules\//, 'nm/');
  return `${nd.callFrame.functionName || '(anonymous)'} ${url === '' ? '' : `${url}:${nd.callFrame.lineNumber + 1}`}`.trim();
}

/** Each sample's node and time (µs), of those taken between `fromUs` and `toUs` (V8's monotonic clock). */
export function* samples(prof: CpuProfile, fromUs = -Infinity, toUs = Infinity): Generator<{ node: ProfileNode; dt: number }> {
  const byId = new Map(prof.nodes.map((nd) => [nd.id, nd]));
  let t = prof.startTime;
  for (let i = 0; i < prof.samples.length; i++) {
    const dt = prof.timeDeltas[i] ?? 0;
    t += dt;
    if (t < fromUs || t > toUs) continue;
    const node = byId.get(prof.samples[i]!);
    if (node !== undefined) yield { node, dt };
  }
}

/** The `n` largest of `times` (µs by frame), each as `  <share of total> %  <frame>`. */
export function topLines(times: Map<string, number>, total: number, n: number): string[] {
  return [...times.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => `  ${((us / total) * 100).toFixed(1).padStart(5)} %  ${k}`);
}

/** The top `n` self-time functions of the CPU profile the service wrote into `dir`. */
export function topOfProfile(dir: string, n = 25): string[] {
  const prof = readCpuProfile(dir);
  if (prof === null) return [NO_PROFILE];
  const self = new Map<string, number>();
  let total = 0;
  for (const { node, dt } of samples(prof)) {
    total += dt;
    const key = frameName(node);
    self.set(key, (self.get(key) ?? 0) + dt);
  }
  return [`CPU profile ${prof.file}: ${(total / 1e6).toFixed(1)} s sampled; top self time:`, ...topLines(self, total, n)];
}
