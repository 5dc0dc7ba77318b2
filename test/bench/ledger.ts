/**
 * `npm run bench:ledger`: append and verify throughput of the ledger, on SQLite and (when
 * SERVICE_DATABASE_URL names a MySQL/MariaDB server) MySQL, through the real classes.
 *
 * Per engine, each on a fresh data dir / throwaway `bench_<random>` database:
 *   1. one writer appending one event after another (each awaited: one commit per event);
 *   2. 8 writers appending at once, 100,000 events in all (the Ledger groups them into commits);
 *   3. verify of the whole chain;
 *   4. verify of a 1,000,000-event chain built directly (entryText/entryHash, big transactions,
 *      and a signed checkpoint every 1,000 events as the service's checkpointer writes them:
 *      verify reports a longer stretch without one as checkpoint_missing),
 *      once inside the whole service (createApp, as GET /v1/ledger/verify runs) and once in a
 *      process holding only the ledger classes (as a CLI ledger-verify runs).
 * Phases 1-3 run in the real service (createApp: the checkpointer runs on every commit). Every
 * phase runs in a child process of its own, so that each peak RSS (sampled every 50 ms, plus the
 * kernel's maxRSS and VmHWM) belongs to that phase alone; this parent only orchestrates.
 *
 * Flags (or env): --events N (BENCH_EVENTS, 100000), --verify-events N (BENCH_VERIFY_EVENTS,
 * 1000000), --single-writer-events N (BENCH_SINGLE_WRITER_EVENTS; default --events on SQLite,
 * at most 20,000 on MySQL), --only sqlite|mysql (BENCH_ONLY).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { App } from '../../host/app.ts';
import type { StoredEntry } from '../../host/ledger/entry.ts';
import type { VerifyReport } from '../../host/ledger/verify.ts';
import {
  count,
  type Check,
  createStore,
  enginesToRun,
  heading,
  machine,
  mb,
  procStatusMb,
  printReport,
  runBenchmark,
  running,
  table,
  type Engine,
  type Store,
} from './common.ts';

const SECRET_KEY = 'ledger-benchmark-secret-key-0123456789abcdef';
const WRITERS = 8;
const MYSQL_SINGLE_WRITER_CAP = 20_000;
const FILL_TX_ROWS = 10_000;
const RSS_SAMPLE_MS = 50;

const TARGETS = {
  sqlite: { append8: 20_000, verify: 100_000 },
  mysql: { append8: 3_000, verify: 50_000 },
  verifyRssMb: 150,
} as const;

type VerifyMode = 'service' | 'lean';

interface Rate {
  events: number;
  seconds: number;
  per_s: number;
}

interface Memory {
  /** RSS when the measured work started. */
  rss_start_mb: number;
  /** Highest sampled RSS during the work. */
  rss_peak_mb: number;
  /** Highest sampled RSS in each quarter of the work's time: flat means constant memory. */
  rss_by_quarter_mb: number[];
  /** process.resourceUsage().maxRSS of the worker process. */
  max_rss_mb: number;
  /** VmHWM of /proc/self/status (the same high-water mark, as the kernel keeps it for this image). */
  vm_hwm_mb: number | null;
}

interface AppendResult {
  append_1_writer: Rate;
  append_8_writers: Rate;
  verify_chain: Rate;
  rss_after_appends_mb: number;
  max_rss_mb: number;
}

type VerifyResult = Rate & Memory & { mode: VerifyMode };

// ------------------------------------------------------------------ helpers

function rate(events: number, ms: number): Rate {
  return { events, seconds: Math.round(ms) / 1000, per_s: Math.round((events * 1000) / ms) };
}

function maxRssMb(): number {
  return mb(process.resourceUsage().maxRSS * 1024);
}

/** Samples RSS every 50 ms from `start()` until `stop()`. */
function rssSampler(): { stop(): Omit<Memory, 'max_rss_mb' | 'vm_hwm_mb'> } {
  const t0 = performance.now();
  const samples: Array<[number, number]> = [[0, process.memoryUsage().rss]];
  const timer = setInterval(() => samples.push([performance.now() - t0, process.memoryUsage().rss]), RSS_SAMPLE_MS);
  return {
    stop: () => {
      clearInterval(timer);
      const end = performance.now() - t0;
      samples.push([end, process.memoryUsage().rss]);
      const quarters = [0, 0, 0, 0];
      for (const [t, rss] of samples) {
        const q = Math.min(3, Math.floor((t / Math.max(end, 1)) * 4));
        quarters[q] = Math.max(quarters[q]!, rss);
      }
      return { rss_start_mb: mb(samples[0]![1]), rss_peak_mb: mb(Math.max(...samples.map((s) => s[1]))), rss_by_quarter_mb: quarters.map(mb) };
    },
  };
}

async function configOf(dataDir: string, databaseUrl: string | null) {
  const { loadConfig } = await import('../../host/config.ts');
  return loadConfig({ SERVICE_DATA_DIR: dataDir, SERVICE_DATABASE_URL: databaseUrl ?? undefined, SERVICE_SECRET_KEY: SECRET_KEY, SERVICE_LOG_LEVEL: 'fatal' });
}

/** The whole service, as `npm start` builds it (minus listening). */
async function openService(dataDir: string, databaseUrl: string | null): Promise<App> {
  const [{ createApp }, { silentLogger }] = await Promise.all([import('../../host/app.ts'), import('../../host/log.ts')]);
  return createApp(await configOf(dataDir, databaseUrl), { log: silentLogger() });
}

/** Only what the ledger needs: the database (migrated), the install identity, the repo. */
async function openLedgerOnly(dataDir: string, databaseUrl: string | null) {
  const [{ openDb }, { migrate }, { InstallRepo }, { ensureIdentity }, { SecretCipher }, { LedgerRepo }, { systemClock }] = await Promise.all([
    import('../../host/storage/db.ts'),
    import('../../host/storage/migrate.ts'),
    import('../../host/install/install.repo.ts'),
    import('../../host/install/identity.ts'),
    import('../../host/secrets/cipher.ts'),
    import('../../host/ledger/ledger.repo.ts'),
    import('../../host/clock.ts'),
  ]);
  const config = await configOf(dataDir, databaseUrl);
  const db = openDb(config);
  await migrate(db);
  const identity = await ensureIdentity(new InstallRepo(db), SecretCipher.load(config.secretKey, config.dataDir), systemClock);
  return { db, identity, repo: new LedgerRepo(db) };
}

async function verified(verify: () => Promise<VerifyReport>, expected: number): Promise<Rate> {
  const t0 = performance.now();
  const report = await verify();
  const ms = performance.now() - t0;
  if (!report.ok || report.checked !== expected) throw new Error(`verify failed: ${JSON.stringify(report)}`);
  return rate(report.checked, ms);
}

// ------------------------------------------------------------------ workers (child processes)

/** Phases 1-3 in the service: 1 writer, 8 writers, verify. */
async function appendWorker(dataDir: string, databaseUrl: string | null, single: number, events: number): Promise<AppendResult> {
  const app = await openService(dataDir, databaseUrl);
  try {
    const start = (await app.ledger.head()).seq;
    const append = async (writers: number, total: number): Promise<Rate> => {
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          const mine = Math.floor(total / writers) + (w < total % writers ? 1 : 0);
          for (let n = 0; n < mine; n++) {
            await app.ledger.append({
              type: 'human.bench',
              actor: `bench-writer-${w}`,
              reason: 'ledger benchmark',
              data: { writer: w, n, service: 'payments-api', note: 'benchmark event' },
            });
          }
        }),
      );
      return rate(total, performance.now() - t0);
    };
    const append_1_writer = await append(1, single);
    const append_8_writers = await append(WRITERS, events);
    const rss_after_appends_mb = mb(process.memoryUsage().rss);
    const verify_chain = await verified(() => app.verifyLedger(), start + single + events);
    return { append_1_writer, append_8_writers, verify_chain, rss_after_appends_mb, max_rss_mb: maxRssMb() };
  } finally {
    await app.close();
  }
}

/**
 * Builds a valid chain of `total` events straight into the tables, FILL_TX_ROWS per transaction,
 * with the checkpoints the service would have written on the way (the Checkpointer, every
 * CHECKPOINT_EVERY_EVENTS events, in the database and the data directory's file).
 */
async function fillWorker(dataDir: string, databaseUrl: string | null, total: number): Promise<Rate & { max_rss_mb: number }> {
  const [{ canonicalJson, entryHash, entryText }, { Checkpointer, CHECKPOINT_EVERY_EVENTS }, { silentLogger }, { systemClock }, { db, identity, repo }] =
    await Promise.all([
      import('../../host/ledger/entry.ts'),
      import('../../host/ledger/checkpoints.ts'),
      import('../../host/log.ts'),
      import('../../host/clock.ts'),
      openLedgerOnly(dataDir, databaseUrl),
    ]);
  const checkpoints = new Checkpointer({ repo, identity, clock: systemClock, dataDir, log: silentLogger() });
  try {
    let head = await repo.head();
    if (head.seq !== 0) throw new Error('fill expects an empty ledger');
    const base = Date.parse('2026-11-22T00:00:00.000Z');
    const t0 = performance.now();
    while (head.seq < total) {
      const rows: StoredEntry[] = [];
      const due: Array<{ seq: number; hash: string }> = [];
      const end = Math.min(total, head.seq + FILL_TX_ROWS);
      for (let seq = head.seq + 1; seq <= end; seq++) {
        const w = seq % WRITERS;
        const e = {
          at: new Date(base + seq).toISOString(),
          type: 'human.bench',
          actor: `bench-writer-${w}`,
          reason: 'ledger benchmark',
          data: canonicalJson({ writer: w, n: seq, service: 'payments-api', note: 'benchmark event' }),
          trace: null,
        };
        const hash = entryHash(head.hash, entryText(e, seq));
        rows.push({ seq, ...e, prev_hash: head.hash, hash });
        head = { seq, hash };
        if (seq % CHECKPOINT_EVERY_EVENTS === 0 || seq === total) due.push(head);
      }
      const last = head;
      await db.transaction((trx) => repo.insert(trx, rows, last));
      for (const h of due) await checkpoints.maybeWrite(h);
      // better-sqlite3 answers synchronously, so without this turn of the event loop the
      // statements Knex prepared are never finalised and the fill grows past a gigabyte.
      await nextTurn();
      if (process.stderr.isTTY) process.stderr.write(`\r  filled ${head.seq.toLocaleString('en')} / ${total.toLocaleString('en')}`);
    }
    if (process.stderr.isTTY) process.stderr.write('\n');
    return { ...rate(total, performance.now() - t0), max_rss_mb: maxRssMb() };
  } finally {
    await db.destroy();
  }
}

/** Phase 4: open the store one way or the other, verify it once, report time and memory. */
async function verifyWorker(mode: VerifyMode, dataDir: string, databaseUrl: string | null, expected: number): Promise<VerifyResult> {
  let verify: () => Promise<VerifyReport>;
  let close: () => Promise<void>;
  if (mode === 'service') {
    const app = await openService(dataDir, databaseUrl);
    verify = () => app.verifyLedger();
    close = () => app.close();
  } else {
    const [{ verifyChain }, { CHECKPOINT_FILE }, { db, identity, repo }] = await Promise.all([
      import('../../host/ledger/verify.ts'),
      import('../../host/ledger/checkpoints.ts'),
      openLedgerOnly(dataDir, databaseUrl),
    ]);
    verify = () => verifyChain(repo, identity, path.join(dataDir, CHECKPOINT_FILE));
    close = () => db.destroy();
  }
  try {
    const sampler = rssSampler();
    const r = await verified(verify, expected);
    return { mode, ...r, ...sampler.stop(), max_rss_mb: maxRssMb(), vm_hwm_mb: procStatusMb('self', 'VmHWM') };
  } finally {
    await close();
  }
}

async function worker(args: string[]): Promise<void> {
  const [kind, dataDir, url, ...rest] = args;
  const databaseUrl = url === '-' ? null : url!;
  const n = rest.map(Number);
  let result: unknown;
  if (kind === 'append') result = await appendWorker(dataDir!, databaseUrl, n[0]!, n[1]!);
  else if (kind === 'fill') result = await fillWorker(dataDir!, databaseUrl, n[0]!);
  else if (kind === 'verify-service' || kind === 'verify-lean')
    result = await verifyWorker(kind === 'verify-lean' ? 'lean' : 'service', dataDir!, databaseUrl, n[0]!);
  else throw new Error(`unknown worker ${kind}`);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

/** The V8 flags `oncall` runs with (bin/run.js's shebang): the lean verify measures what `oncall ledger-verify` does. */
function cliNodeFlags(): string[] {
  const shebang = readFileSync(new URL('../../bin/run.js', import.meta.url), 'utf8').split('\n')[0] ?? '';
  return shebang
    .replace(/^#!\S*env -S node\s*/, '')
    .split(/\s+/)
    .filter((f) => f.startsWith('--'));
}

function runWorker<T>(kind: string, store: Store, ...numbers: number[]): Promise<T> {
  return new Promise((resolve, reject) => {
    const args = [
      ...process.execArgv,
      ...(kind === 'verify-lean' ? cliNodeFlags() : []),
      fileURLToPath(import.meta.url),
      '--worker',
      kind,
      store.dataDir,
      store.databaseUrl ?? '-',
      ...numbers.map(String),
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    running.add(child);
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      running.delete(child);
      if (code !== 0) return reject(new Error(`${kind} worker ended with ${signal ?? `code ${code}`}: ${out.trim()}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as T);
      } catch {
        reject(new Error(`${kind} worker printed no result: ${out.trim()}`));
      }
    });
  });
}

// ------------------------------------------------------------------ stores (parent)

// ------------------------------------------------------------------ one engine

interface EngineResult extends AppendResult {
  engine: Engine;
  fill_direct: Rate & { max_rss_mb: number };
  verify_big: VerifyResult;
  verify_big_lean: VerifyResult;
  notes: string[];
}

async function benchEngine(engine: Engine, serverUrl: string | null, events: number, single: number, verifyEvents: number): Promise<EngineResult> {
  const notes: string[] = [];
  if (single !== events) notes.push(`the 1-writer phase appends ${single.toLocaleString('en')} events (one commit each) to keep the run short`);
  const log = (s: string) => process.stderr.write(`[${engine}] ${s}\n`);

  const small = await createStore(engine, serverUrl, 'ledger');
  let appended: AppendResult;
  try {
    log(`append ${single} events with 1 writer, then ${events} with ${WRITERS} writers, then verify…`);
    appended = await runWorker<AppendResult>('append', small, single, events);
  } finally {
    await small.cleanup();
  }

  const big = await createStore(engine, serverUrl, 'ledger');
  let fill: EngineResult['fill_direct'], verifyService: VerifyResult, verifyLean: VerifyResult;
  try {
    log(`fill a ${verifyEvents}-event chain directly…`);
    fill = await runWorker('fill', big, verifyEvents);
    log(`verify it in a service process…`);
    verifyService = await runWorker<VerifyResult>('verify-service', big, verifyEvents);
    log(`verify it in a process holding only the ledger classes…`);
    verifyLean = await runWorker<VerifyResult>('verify-lean', big, verifyEvents);
  } finally {
    await big.cleanup();
  }
  return { engine, ...appended, fill_direct: fill, verify_big: verifyService, verify_big_lean: verifyLean, notes };
}

// ------------------------------------------------------------------ report

function checks(r: EngineResult): Check[] {
  const t = TARGETS[r.engine];
  const n = r.verify_big.events.toLocaleString('en');
  return [
    {
      engine: r.engine,
      what: `append, ${WRITERS} writers (events/s)`,
      value: r.append_8_writers.per_s,
      target: `≥ ${t.append8.toLocaleString('en')}`,
      pass: r.append_8_writers.per_s >= t.append8,
    },
    {
      engine: r.engine,
      what: 'verify, whole appended chain (events/s)',
      value: r.verify_chain.per_s,
      target: `≥ ${t.verify.toLocaleString('en')}`,
      pass: r.verify_chain.per_s >= t.verify,
    },
    {
      engine: r.engine,
      what: `verify, ${n} events, service process (events/s)`,
      value: r.verify_big.per_s,
      target: `≥ ${t.verify.toLocaleString('en')}`,
      pass: r.verify_big.per_s >= t.verify,
    },
    {
      engine: r.engine,
      what: `peak RSS verifying ${n} events, as oncall ledger-verify (MB)`,
      value: r.verify_big_lean.max_rss_mb,
      target: `< ${TARGETS.verifyRssMb}`,
      pass: r.verify_big_lean.max_rss_mb < TARGETS.verifyRssMb,
    },
  ];
}

function report(results: EngineResult[], started: Date, events: number, verifyEvents: number, mysqlSkipped: boolean): void {
  const fmt = (n: number) => n.toLocaleString('en');
  const sec = (r: Rate) => r.seconds.toFixed(2);
  const verdict = (c: Check | undefined) => (c === undefined ? '' : c.pass ? 'PASS' : 'MISS');
  const rows: string[][] = [['engine', 'phase', 'events', 'seconds', 'events/s', 'target', 'result']];
  const all: Check[] = [];
  for (const r of results) {
    const c = checks(r);
    all.push(...c);
    const v = r.verify_big;
    const l = r.verify_big_lean;
    rows.push([r.engine, 'append, 1 writer', fmt(r.append_1_writer.events), sec(r.append_1_writer), fmt(r.append_1_writer.per_s), '', '']);
    rows.push([
      r.engine,
      `append, ${WRITERS} writers`,
      fmt(r.append_8_writers.events),
      sec(r.append_8_writers),
      fmt(r.append_8_writers.per_s),
      c[0]!.target,
      verdict(c[0]),
    ]);
    rows.push([
      r.engine,
      'verify, whole appended chain',
      fmt(r.verify_chain.events),
      sec(r.verify_chain),
      fmt(r.verify_chain.per_s),
      c[1]!.target,
      verdict(c[1]),
    ]);
    rows.push([r.engine, 'fill, direct inserts (setup)', fmt(r.fill_direct.events), sec(r.fill_direct), fmt(r.fill_direct.per_s), '', '']);
    rows.push([r.engine, 'verify, big chain, service', fmt(v.events), sec(v), fmt(v.per_s), c[2]!.target, verdict(c[2])]);
    rows.push([r.engine, 'verify, big chain, as ledger-verify', fmt(l.events), sec(l), fmt(l.per_s), '', '']);
    rows.push([r.engine, '  peak RSS MB, service', '', '', String(v.max_rss_mb), '', '']);
    rows.push([r.engine, '  peak RSS MB, as ledger-verify', '', '', String(l.max_rss_mb), c[3]!.target, verdict(c[3])]);
  }
  const summary = {
    ...machine('ledger', started),
    events,
    verify_events: verifyEvents,
    results,
    checks: all,
    all_pass: all.every((c) => c.pass),
  };

  const out: string[] = ['', heading('Ledger', started), '', table(rows), ''];
  for (const r of results) {
    for (const v of [r.verify_big, r.verify_big_lean]) {
      out.push(
        `${r.engine}: verify in a ${v.mode} process: RSS ${v.rss_start_mb} MB before, by quarter ${v.rss_by_quarter_mb.join(' / ')} MB, peak ${v.rss_peak_mb} MB; maxRSS ${v.max_rss_mb} MB, VmHWM ${v.vm_hwm_mb ?? '?'} MB`,
      );
    }
    out.push(
      `${r.engine}: service process after the appends: RSS ${r.rss_after_appends_mb} MB, maxRSS ${r.max_rss_mb} MB; fill process maxRSS ${r.fill_direct.max_rss_mb} MB (not targets)`,
    );
    for (const n of r.notes) out.push(`${r.engine}: note: ${n}`);
  }
  printReport(out, all, mysqlSkipped, summary);
}

async function main(): Promise<void> {
  const events = count('events', 'BENCH_EVENTS', 100_000);
  const verifyEvents = count('verify-events', 'BENCH_VERIFY_EVENTS', 1_000_000);
  const { engines, serverUrl, mysqlSkipped } = enginesToRun();

  const started = new Date();
  process.stderr.write(`ledger benchmark: ${engines.join(' + ')}; ${events} events appended, ${verifyEvents} verified\n`);
  const results: EngineResult[] = [];
  for (const engine of engines) {
    const single = count('single-writer-events', 'BENCH_SINGLE_WRITER_EVENTS', engine === 'mysql' ? Math.min(events, MYSQL_SINGLE_WRITER_CAP) : events);
    results.push(await benchEngine(engine, serverUrl, events, single, verifyEvents));
  }
  report(results, started, events, verifyEvents, mysqlSkipped);
}

if (process.argv[2] === '--worker') {
  await worker(process.argv.slice(3));
} else {
  await runBenchmark('ledger', main);
}
