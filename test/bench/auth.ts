/**
 * `npm run bench:auth`: the cost of signing in and of being signed in, on the real service
 * (`node host/main.ts`) over loopback, on SQLite and (when SERVICE_DATABASE_URL names a
 * MySQL/MariaDB server) MySQL.
 *
 * Per engine, on a fresh data dir / throwaway `bench_<random>` database, one service process:
 *   0. brought to `operating` over the API (a licence signed by a vendor key made here, whose
 *      public half is SERVICE_LICENCE_PUBKEY, then POST /v1/auth/bootstrap with no mail
 *      provider); then a person, ada@bank.example (admin), is added, given a password
 *      (POST /v1/people/:email/password) and signs in with it (POST /v1/auth/password), and the
 *      admin token opens a break-glass session (POST /v1/login: no code can be sent);
 *   1. GET /v1/auth/me with Ada's session token, 32 connections: the headline. Each request
 *      finds the session joined with its person and asks the access policy, then reads the
 *      person for the answer. Target ≥ 3,000 requests/s, all 200;
 *   2. the same with the break-glass session (no person, no access policy): the session check alone;
 *   3. the same with the admin token (no session at all): the floor of routing and answering,
 *      against which the session check's share is shown;
 *   4. the scrypt check of a password: N sequential POST /v1/auth/password with Ada's right
 *      password (p50/max), and verifyPassword of host/identity/password.ts in this process
 *      (median of 10). Only right passwords are used (5 wrong ones lock the address), and
 *      N ≤ 25, as one client address has 30 tries per 10 minutes (the 31st answers 429);
 *   5. the password attack of issue 22 (item 9): 12 addresses (X-Forwarded-For; 127.0.0.1 is a
 *      trusted proxy) send 10 wrong passwords each for unknown addresses, two at a time per
 *      address and the next as soon as one is answered (a 503 sign_in_busy is sent again after
 *      20 ms), plus a burst of three more per address at the start, so the scrypt queue stays
 *      full; meanwhile Ada signs in with her right password from a 13th address, 5 times, one
 *      after the other, each once every attacking address has had a wrong password answered.
 *      Target: each valid sign-in answered 200 within 2 s (it took 52 s before the queue was
 *      bounded and fair);
 *   6. the service's peak RSS (VmHWM of /proc/<pid>/status): after the load phases and at the
 *      end (scrypt takes 32 MiB a hash, at most two at once).
 * Every answer must be a 200 with the expected body; a phase with anything else is reported as
 * such (never PASS). The service is killed in every case, also on Ctrl-C.
 *
 * Flags (or env): --duration S (BENCH_DURATION, 15), --connections N (BENCH_CONNECTIONS, 32),
 * --logins N (BENCH_LOGINS, 20, at most 25), --only sqlite|mysql (BENCH_ONLY), --profile
 * (BENCH_PROFILE=1: run the service with --cpu-prof and print its top self-time functions;
 * figures taken under the profiler are slower).
 */
import { randomBytes } from 'node:crypto';
import { hashPassword, verifyPassword } from '../../host/identity/password.ts';
import { count, type Check, enginesToRun, heading, machine, median, procStatusMb, round1, printReport, runBenchmark, table, type Engine } from './common.ts';
import {
  autocannon,
  type AcRequest,
  call,
  expect,
  frameName,
  loadFigures,
  type LoadFigures,
  loadOptions,
  makeOperating,
  NO_PROFILE,
  type ProfileNode,
  readCpuProfile,
  samples,
  stopAndMeasure,
  topLines,
  withService,
} from './service.ts';

const ADMIN_TOKEN = `bench-admin-${randomBytes(16).toString('hex')}`;
const SECRET_KEY = 'auth-benchmark-secret-key-0123456789abcdef';
const PERSON = { email: 'ada@bank.example', name: 'Ada', role: 'admin' } as const;
/** One client address may try 30 passwords per 10 minutes; one try goes to getting the token. */
const MAX_LOGINS = 25;
const VERIFY_RUNS = 10;

const TARGETS = {
  sqlite: { personMe: 3_000, validUnderAttackMs: 2_000 },
  mysql: { personMe: 3_000, validUnderAttackMs: 2_000 },
} as const;

interface Tokens {
  person: string;
  password: string;
  breakGlass: string;
}

/** Operating, with Ada's password session and a break-glass session. */
async function prepare(base: string): Promise<Tokens> {
  await makeOperating(base, ADMIN_TOKEN);
  await expect(`adding ${PERSON.email}`, 201, call(base, 'POST', '/v1/people', ADMIN_TOKEN, PERSON));
  const { password } = await expect<{ password: string }>(
    'giving a password',
    201,
    call(base, 'POST', `/v1/people/${encodeURIComponent(PERSON.email)}/password`, ADMIN_TOKEN, { expires: '30d' }),
  );
  const { token: person } = await expect<{ token: string }>(
    'password sign-in',
    200,
    call(base, 'POST', '/v1/auth/password', null, { email: PERSON.email, password }),
  );
  const glass = await expect<{ break_glass?: boolean; token: string }>('break-glass login', 200, call(base, 'POST', '/v1/login', null, { token: ADMIN_TOKEN }));
  if (glass.break_glass !== true) throw new Error(`POST /v1/login did not open a break-glass session: ${JSON.stringify(glass)}`);
  return { person, password, breakGlass: glass.token };
}

// ------------------------------------------------------------------ load

type Via = 'session' | 'break_glass' | 'admin_token';

type Phase = {
  label: string;
  via: Via;
  requests: number;
  seconds: number;
  requests_per_s: number;
} & LoadFigures<'200'>;

/** GET /v1/auth/me with one token: checked once alone (the answer says who), warmed up, then loaded. */
async function driveMe(
  base: string,
  label: string,
  token: string,
  via: Via,
  connections: number,
  duration: number,
  log: (s: string) => void,
  window: Window,
): Promise<Phase> {
  const probe = await expect<{ via: string; user: { email: string } | null }>(`GET /v1/auth/me (${label})`, 200, call(base, 'GET', '/v1/auth/me', token));
  if (probe.via !== via || (via === 'session' && probe.user?.email !== PERSON.email))
    throw new Error(`GET /v1/auth/me (${label}) answered ${JSON.stringify(probe)}`);
  const request: AcRequest = { method: 'GET', path: '/v1/auth/me', headers: { authorization: `Bearer ${token}` } };
  await autocannon({ url: base, connections, duration: 1, timeout: 10, requests: [request] });
  log(`${label}: ${connections} connections, ${duration} s…`);
  window.fromUs = nowUs();
  const result = await autocannon({ url: base, connections, duration, timeout: 10, requests: [request] });
  window.toUs = nowUs();
  const figures = loadFigures(result, connections, '200');
  const phase: Phase = {
    label,
    via,
    requests: figures.ok_200,
    seconds: result.duration,
    requests_per_s: Math.round(figures.ok_200 / result.duration),
    ...figures,
  };
  log(
    `  ${phase.requests_per_s}/s, p50 ${phase.p50_ms} ms, p99 ${phase.p99_ms} ms${phase.clean ? '' : `, NOT CLEAN: ${JSON.stringify(phase.statuses)}, ${phase.errors} errors, ${phase.timeouts} timeouts`}`,
  );
  return phase;
}

interface Logins {
  n: number;
  p50_ms: number;
  max_ms: number;
  min_ms: number;
  all_200: boolean;
  statuses: Record<string, number>;
}

/** N sequential password sign-ins with the right password: the scrypt check plus opening a session. */
async function logins(base: string, password: string, n: number): Promise<Logins> {
  const times: number[] = [];
  const statuses: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await call(base, 'POST', '/v1/auth/password', null, { email: PERSON.email, password });
    times.push(performance.now() - t0);
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
  }
  return { n, p50_ms: round1(median(times)), max_ms: round1(Math.max(...times)), min_ms: round1(Math.min(...times)), all_200: statuses['200'] === n, statuses };
}

interface Attack {
  /** How long each valid sign-in took, ms, and its status. */
  valid: Array<{ ms: number; status: number }>;
  /** The attackers' answers by status. */
  statuses: Record<string, number>;
  seconds: number;
}

/** Phase 5: 12 addresses keep the scrypt queue full of wrong passwords while Ada signs in, 5 times. */
async function attack(base: string, password: string): Promise<Attack> {
  const post = (client: string, body: unknown) =>
    fetch(`${base}/v1/auth/password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': client },
      body: JSON.stringify(body),
    });
  const statuses: Record<string, number> = {};
  const wrongOf = new Map<number, number>();
  const t0 = performance.now();
  const seen = (status: number) => (statuses[status] = (statuses[status] ?? 0) + 1);
  const worker = async (c: number, w: number) => {
    for (let i = 0; (wrongOf.get(c) ?? 0) < 10; i++) {
      const r = await post(`198.51.100.${c + 1}`, { email: `nobody${c}@bank.example`, password: `wrong-password-${w}-${i}` });
      await r.arrayBuffer();
      seen(r.status);
      if (r.status === 401) wrongOf.set(c, (wrongOf.get(c) ?? 0) + 1);
      else if (r.status === 503) await new Promise((res) => setTimeout(res, 20));
      else return;
    }
  };
  const running = [
    ...Array.from({ length: 12 }, (_, c) => [worker(c, 0), worker(c, 1)]).flat(),
    ...Array.from({ length: 36 }, (_, i) =>
      post(`198.51.100.${(i % 12) + 1}`, { email: `nobody${i % 12}@bank.example`, password: 'wrong-burst' }).then(
        async (r) => (await r.arrayBuffer(), seen(r.status)),
      ),
    ),
  ];
  let attacking = true;
  const over = Promise.all(running).then(() => (attacking = false));
  while (wrongOf.size < 12) await new Promise((r) => setTimeout(r, 5));
  const valid: Attack['valid'] = [];
  for (let i = 0; i < 5 && attacking; i++) {
    const v0 = performance.now();
    const r = await post('203.0.113.7', { email: PERSON.email, password });
    await r.arrayBuffer();
    valid.push({ ms: round1(performance.now() - v0), status: r.status });
    await new Promise((res) => setTimeout(res, 200));
  }
  await over;
  return { valid, statuses, seconds: round1((performance.now() - t0) / 1000) };
}

/** verifyPassword in this process, median of `runs`, against a hash made with the service's parameters. */
async function verifyInProcess(
  runs: number,
): Promise<{ runs: number; median_ms: number; max_ms: number; hash_ms: number; unknown_median_ms: number; unknown_ratio: number }> {
  const password = 'Bench7PasswordXyz234';
  const h0 = performance.now();
  const stored = await hashPassword(password);
  const hash_ms = performance.now() - h0;
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    if (!(await verifyPassword(password, stored))) throw new Error('verifyPassword refused the right password');
    times.push(performance.now() - t0);
  }
  // An unknown address (no stored hash) is checked against the decoy: the same scrypt work, so the
  // same time. test/identity/sign-in.test.ts asserts the work (one derivation, same parameters); this is
  // where the clock compares them. The first call also makes the decoy, so it is left out.
  await verifyPassword(password, null);
  const unknown: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    if (await verifyPassword(password, null)) throw new Error('verifyPassword accepted a password with no stored hash');
    unknown.push(performance.now() - t0);
  }
  const m = median(times);
  const u = median(unknown);
  return {
    runs,
    median_ms: round1(m),
    max_ms: round1(Math.max(...times)),
    hash_ms: round1(hash_ms),
    unknown_median_ms: round1(u),
    unknown_ratio: Math.round((u / m) * 100) / 100,
  };
}

// ------------------------------------------------------------------ profile

/** A stretch of the run, in the monotonic clock (µs) that V8's profile timestamps use too. */
interface Window {
  name: string;
  fromUs: number;
  toUs: number;
}
const nowUs = (): number => Number(process.hrtime.bigint() / 1000n);

/**
 * The service's CPU profile, per window of the run (each load phase alone): the top self-time
 * functions, and the top inclusive time of the service's own functions (host/, plugins/), which
 * says which step of a request the time goes to.
 */
function topOfProfile(dir: string, windows: Window[], nSelf = 15, nOwn = 12): string[] {
  const prof = readCpuProfile(dir);
  if (prof === null) return [NO_PROFILE];
  const byId = new Map(prof.nodes.map((nd) => [nd.id, nd]));
  const parent = new Map<number, number>();
  for (const nd of prof.nodes) for (const c of nd.children ?? []) parent.set(c, nd.id);
  const own = (nd: ProfileNode): boolean => /^file:\/\/.*\/(host|plugins)\//.test(nd.callFrame.url) && !nd.callFrame.url.includes('node_modules');
  const out = [`CPU profile ${prof.file}:`];
  for (const w of windows) {
    const self = new Map<string, number>();
    const incl = new Map<string, number>();
    let total = 0;
    for (const { node, dt } of samples(prof, w.fromUs, w.toUs)) {
      total += dt;
      self.set(frameName(node), (self.get(frameName(node)) ?? 0) + dt);
      const seen = new Set<string>();
      for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
        const a = byId.get(id)!;
        if (!own(a)) continue;
        const k = frameName(a);
        if (seen.has(k)) continue;
        seen.add(k);
        incl.set(k, (incl.get(k) ?? 0) + dt);
      }
    }
    if (total === 0) {
      out.push(`${w.name}: no samples`);
      continue;
    }
    out.push(`${w.name}: ${(total / 1e6).toFixed(1)} s sampled; top self time:`, ...topLines(self, total, nSelf));
    out.push(`${w.name}: the service's own functions, inclusive time:`, ...topLines(incl, total, nOwn));
  }
  return out;
}

// ------------------------------------------------------------------ one engine

interface EngineResult {
  engine: Engine;
  load_before: string;
  person: Phase;
  break_glass: Phase;
  admin_token: Phase;
  logins: Logins;
  attack: Attack;
  service_vm_hwm_after_load_mb: number | null;
  service_vm_hwm_mb: number | null;
  service_rss_end_mb: number | null;
  profile: string[] | null;
}

async function benchEngine(
  engine: Engine,
  serverUrl: string | null,
  o: { duration: number; connections: number; logins: number; profile: boolean },
): Promise<EngineResult> {
  return withService(
    engine,
    serverUrl,
    'auth',
    { adminToken: ADMIN_TOKEN, secretKey: SECRET_KEY, profile: o.profile, env: { SERVICE_TRUSTED_PROXIES: '127.0.0.1,::1' } },
    async ({ service, log, load_before, profileDir }) => {
      const tokens = await prepare(service.base);
      const windows: Window[] = [];
      const phase = async (name: string, token: string, via: Via): Promise<Phase> => {
        const w: Window = { name: `${name} under load`, fromUs: 0, toUs: 0 };
        windows.push(w);
        return driveMe(service.base, name, token, via, o.connections, o.duration, log, w);
      };
      const person = await phase(`${PERSON.email} session`, tokens.person, 'session');
      const break_glass = await phase('break-glass session', tokens.breakGlass, 'break_glass');
      const admin_token = await phase('admin token (no session)', ADMIN_TOKEN, 'admin_token');
      if (!person.clean || !break_glass.clean || !admin_token.clean) log(`the service's last log lines:\n${service.tail()}`);
      const service_vm_hwm_after_load_mb = procStatusMb(service.child.pid!, 'VmHWM');
      log(`${o.logins} sequential password sign-ins…`);
      const signIns: Window = { name: 'password sign-ins', fromUs: nowUs(), toUs: 0 };
      const l = await logins(service.base, tokens.password, o.logins);
      signIns.toUs = nowUs();
      windows.push(signIns);
      log(`  p50 ${l.p50_ms} ms, max ${l.max_ms} ms${l.all_200 ? '' : `, NOT ALL 200: ${JSON.stringify(l.statuses)}`}`);
      log('12 addresses hammer wrong passwords while Ada signs in from a 13th…');
      const hammered: Window = { name: 'password attack', fromUs: nowUs(), toUs: 0 };
      const a = await attack(service.base, tokens.password);
      hammered.toUs = nowUs();
      windows.push(hammered);
      log(`  valid sign-ins: ${a.valid.map((v) => `${v.status} in ${v.ms} ms`).join(', ')}; attackers: ${JSON.stringify(a.statuses)} in ${a.seconds} s`);
      const memory = await stopAndMeasure(service);
      const profile = profileDir === null ? null : topOfProfile(profileDir, windows);
      return { engine, load_before, person, break_glass, admin_token, logins: l, attack: a, service_vm_hwm_after_load_mb, ...memory, profile };
    },
  );
}

// ------------------------------------------------------------------ report

function checks(r: EngineResult): Check[] {
  const t = TARGETS[r.engine];
  return [
    {
      engine: r.engine,
      what: `GET /v1/auth/me with a person's session, requests/s`,
      value: r.person.requests_per_s,
      target: `≥ ${t.personMe.toLocaleString('en')}`,
      pass: r.person.clean && r.person.requests_per_s >= t.personMe,
    },
    {
      engine: r.engine,
      what: 'a valid password sign-in while 12 addresses hammer wrong ones, worst ms',
      value: r.attack.valid.length === 0 ? NaN : Math.max(...r.attack.valid.map((v) => v.ms)),
      target: `< ${t.validUnderAttackMs.toLocaleString('en')}`,
      pass: r.attack.valid.length > 0 && r.attack.valid.every((v) => v.status === 200 && v.ms < t.validUnderAttackMs),
    },
  ];
}

/** How much of a request's time the session check takes, from the throughput against the admin token's. */
function sessionShare(p: Phase, floor: Phase): number {
  if (p.requests_per_s === 0 || floor.requests_per_s === 0) return NaN;
  return Math.round((1 - p.requests_per_s / floor.requests_per_s) * 100);
}

function report(results: EngineResult[], started: Date, duration: number, mysqlSkipped: boolean, inProcess: Awaited<ReturnType<typeof verifyInProcess>>): void {
  const fmt = (n: number) => n.toLocaleString('en');
  const state = (p: Phase) => (p.clean ? 'all 200' : `${p.non_200} non-200, ${p.errors} err, ${p.timeouts} t/o`);
  const rows: string[][] = [['engine', 'phase', 'requests', 'req/s', 'p50 ms', 'p99 ms', 'answers', 'target', 'result']];
  const all: Check[] = [];
  for (const r of results) {
    const [c, underAttack] = checks(r);
    all.push(c!, underAttack!);
    const me = (p: Phase) => `GET /v1/auth/me, ${p.label}, ${p.connections} conns`;
    rows.push([
      r.engine,
      me(r.person),
      fmt(r.person.requests),
      fmt(r.person.requests_per_s),
      String(r.person.p50_ms),
      String(r.person.p99_ms),
      state(r.person),
      `${c!.target} req/s`,
      c!.pass ? 'PASS' : 'MISS',
    ]);
    rows.push([
      r.engine,
      me(r.break_glass),
      fmt(r.break_glass.requests),
      fmt(r.break_glass.requests_per_s),
      String(r.break_glass.p50_ms),
      String(r.break_glass.p99_ms),
      state(r.break_glass),
      '',
      '',
    ]);
    rows.push([
      r.engine,
      me(r.admin_token),
      fmt(r.admin_token.requests),
      fmt(r.admin_token.requests_per_s),
      String(r.admin_token.p50_ms),
      String(r.admin_token.p99_ms),
      state(r.admin_token),
      '',
      '',
    ]);
    rows.push([
      r.engine,
      `POST /v1/auth/password ×${r.logins.n}, sequential`,
      fmt(r.logins.n),
      '',
      String(r.logins.p50_ms),
      `max ${r.logins.max_ms}`,
      r.logins.all_200 ? 'all 200' : JSON.stringify(r.logins.statuses),
      '',
      '',
    ]);
    rows.push([
      r.engine,
      `POST /v1/auth/password (right) ×${r.attack.valid.length} while 12 addresses hammer wrong ones`,
      fmt(r.attack.valid.length),
      '',
      String(round1(median(r.attack.valid.map((v) => v.ms)))),
      `max ${underAttack!.value}`,
      r.attack.valid.every((v) => v.status === 200) ? 'all 200' : JSON.stringify(r.attack.valid.map((v) => v.status)),
      `${underAttack!.target} ms`,
      underAttack!.pass ? 'PASS' : 'MISS',
    ]);
    rows.push([r.engine, '  service peak RSS (VmHWM) MB', '', '', '', '', '', String(r.service_vm_hwm_mb ?? '?'), '']);
  }
  const summary = {
    ...machine('auth', started),
    duration_s: duration,
    verify_in_process: inProcess,
    results: results.map(({ profile: _p, ...r }) => ({
      ...r,
      session_share_pct: sessionShare(r.person, r.admin_token),
      break_glass_share_pct: sessionShare(r.break_glass, r.admin_token),
    })),
    checks: all,
    all_pass: all.every((c) => c.pass),
  };
  const out: string[] = ['', heading('Auth', started), '', table(rows), ''];
  out.push(
    `verifyPassword in this process (scrypt N=2^15 r=8 p=3): median ${inProcess.median_ms} ms, max ${inProcess.max_ms} ms of ${inProcess.runs}; hashPassword ${inProcess.hash_ms} ms; an unknown address (the decoy hash) median ${inProcess.unknown_median_ms} ms, ${inProcess.unknown_ratio}× a known one`,
  );
  for (const r of results) {
    out.push(
      `${r.engine}: load average before ${r.load_before}; service peak RSS ${r.service_vm_hwm_after_load_mb ?? '?'} MB after the /v1/auth/me load, ${r.service_vm_hwm_mb ?? '?'} MB after the sign-ins; RSS at the end ${r.service_rss_end_mb ?? '?'} MB`,
    );
    out.push(
      `${r.engine}: against the admin token (no session, ${fmt(r.admin_token.requests_per_s)}/s), a person's session costs ${sessionShare(r.person, r.admin_token)} % of the throughput, a break-glass session ${sessionShare(r.break_glass, r.admin_token)} %`,
    );
    out.push(
      `${r.engine}: password sign-in over HTTP p50 ${r.logins.p50_ms} ms (min ${r.logins.min_ms}, max ${r.logins.max_ms}) against verifyPassword alone ${inProcess.median_ms} ms (scrypt varies by ±20 % from run to run; beyond it a sign-in also checks the limits, writes the ledger and opens the session)`,
    );
    for (const p of [r.person, r.break_glass, r.admin_token])
      if (!p.clean) out.push(`${r.engine}: ${p.label} had errors (${state(p)}, ${JSON.stringify(p.statuses)}): its figures do not count`);
    out.push(
      `${r.engine}: the attackers' answers: ${JSON.stringify(r.attack.statuses)} in ${r.attack.seconds} s (503: sign_in_busy, the queue full; 429: an address's 30 tries used)`,
    );
    if (!r.logins.all_200) out.push(`${r.engine}: not every password sign-in was a 200 (${JSON.stringify(r.logins.statuses)}): its timings do not count`);
    if (r.profile !== null) out.push(...r.profile.map((l) => `${r.engine}: ${l}`));
  }
  printReport(out, all, mysqlSkipped, summary);
}

async function main(): Promise<void> {
  const { duration, connections, profile } = loadOptions();
  const loginCount = count('logins', 'BENCH_LOGINS', 20);
  if (loginCount > MAX_LOGINS) throw new Error(`--logins must be at most ${MAX_LOGINS}: one client address has 30 password tries per 10 minutes`);
  const { engines, serverUrl, mysqlSkipped } = enginesToRun();

  const started = new Date();
  process.stderr.write(`auth benchmark: ${engines.join(' + ')}; ${duration} s per phase${profile ? ', under --cpu-prof' : ''}\n`);
  const inProcess = await verifyInProcess(VERIFY_RUNS);
  process.stderr.write(`verifyPassword in this process: median ${inProcess.median_ms} ms of ${inProcess.runs}\n`);
  const results: EngineResult[] = [];
  for (const engine of engines) results.push(await benchEngine(engine, serverUrl, { duration, connections, logins: loginCount, profile }));
  report(results, started, duration, mysqlSkipped, inProcess);
}

await runBenchmark('auth', main);
