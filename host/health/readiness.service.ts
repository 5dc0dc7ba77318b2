import { randomBytes } from 'node:crypto';
import { unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import { isDiskFull } from '../storage/disk-full.ts';
import type { SchemaState } from '../storage/migrate.ts';
import type { ProbeRepo } from './probe.repo.ts';

/** Why the service should not be sent traffic now (GET /health/ready answers them with 503). */
export type NotReadyReason = 'shutting_down' | 'schema_newer' | 'migrations_pending' | 'disk_full' | 'storage_unwritable' | 'storage_timeout';

export interface ReadinessReport {
  ready: boolean;
  /** Empty when ready; else every reason found, most serious first. */
  reasons: NotReadyReason[];
  checked_at: string;
}

/** A check's answer is reused this long (real time): probes from several balancers cost one write a second, and a flood of them no more. */
export const READY_CACHE_MS = 1000;
/** A write that has not finished by then counts as failed (a database server waiting for disk space hangs rather than fails). */
export const PROBE_TIMEOUT_MS = 5000;
/** What the file probe writes: one new page, so a disk with no free block fails it. */
const PROBE_BYTES = 4096;

const ORDER: NotReadyReason[] = ['shutting_down', 'schema_newer', 'migrations_pending', 'disk_full', 'storage_unwritable', 'storage_timeout'];

class ProbeTimeout extends Error {}

export interface ReadinessDeps {
  probe: ProbeRepo;
  schema: () => Promise<SchemaState>;
  dataDir: string;
  clock: Clock;
  log: Logger;
  /** Tests: how long an answer is reused (default READY_CACHE_MS) and a write may take (PROBE_TIMEOUT_MS). */
  cacheMs?: number;
  timeoutMs?: number;
}

/**
 * Readiness, kept apart from liveness (GET /health): whether a balancer should send this host
 * traffic. Not ready while the shutdown has begun (`markShuttingDown`), while the database's
 * schema is not this version's (migrations pending, or migrated by a newer version), or while
 * storage cannot be written: a new file in the data directory (a full disk fails it even where
 * SQLite's write-ahead log still has room) and a row rewritten in the database (read-only,
 * unreachable or full). One check runs at a time and its answer is reused for a second, so the
 * unauthenticated endpoint cannot be turned into a stream of writes.
 */
export class Readiness {
  #shuttingDown = false;
  #last: { report: ReadinessReport; atMs: number } | null = null;
  #running: Promise<ReadinessReport> | null = null;
  #seq = 0;

  readonly #d: ReadinessDeps;

  constructor(deps: ReadinessDeps) {
    this.#d = deps;
  }

  /** True once the shutdown has begun: readiness answers 503 `shutting_down` from then on. */
  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** The shutdown sequence's first step: balancers stop sending traffic here. Cannot be undone. */
  markShuttingDown(): void {
    this.#shuttingDown = true;
    this.#last = null;
  }

  async check(): Promise<ReadinessReport> {
    if (this.#shuttingDown) return { ready: false, reasons: ['shutting_down'], checked_at: this.#d.clock.now().toISOString() };
    const last = this.#last;
    if (last !== null && performance.now() - last.atMs < (this.#d.cacheMs ?? READY_CACHE_MS)) return last.report;
    this.#running ??= this.#probe().finally(() => (this.#running = null));
    return this.#running;
  }

  async #probe(): Promise<ReadinessReport> {
    const problems = new Map<NotReadyReason, string>();
    const failed = (what: string) => (e: unknown) => {
      const reason: NotReadyReason = e instanceof ProbeTimeout ? 'storage_timeout' : isDiskFull(e) ? 'disk_full' : 'storage_unwritable';
      problems.set(reason, `${what}: ${describe(e)}`);
    };
    const at = this.#d.clock.now().toISOString();
    await Promise.all([
      this.#timed(() => this.#writeFile()).catch(failed(`writing in ${this.#d.dataDir}`)),
      this.#timed(() => this.#d.probe.write(at)).catch(failed('writing to the database')),
      this.#timed(() => this.#d.schema()).then((s) => {
        if (s.unknown.length > 0) problems.set('schema_newer', `the database was migrated by a newer version (${s.unknown.at(-1)})`);
        else if (s.pending.length > 0) problems.set('migrations_pending', `${s.pending.length} migration(s) not applied`);
      }, failed('reading the migrations')),
    ]);
    if (this.#shuttingDown) problems.set('shutting_down', 'the shutdown has begun');
    const reasons = ORDER.filter((r) => problems.has(r));
    const report: ReadinessReport = { ready: reasons.length === 0, reasons, checked_at: at };
    const before = this.#last?.report ?? null;
    if (before === null ? !report.ready : before.ready !== report.ready || before.reasons.join() !== reasons.join()) {
      if (report.ready) this.#d.log.info({ readiness: { ready: true } }, 'ready again');
      else this.#d.log.warn({ readiness: { ready: false, reasons, problems: Object.fromEntries(problems) } }, 'not ready');
    }
    this.#last = { report, atMs: performance.now() };
    return report;
  }

  /** A new file (never an old one rewritten, which needs no free block), removed at once. */
  async #writeFile(): Promise<void> {
    const file = path.join(this.#d.dataDir, `.ready-${process.pid}-${++this.#seq}-${randomBytes(3).toString('hex')}`);
    try {
      await writeFile(file, Buffer.alloc(PROBE_BYTES), { flag: 'wx', mode: 0o600 });
    } finally {
      await unlink(file).catch(() => undefined);
    }
  }

  #timed<T>(fn: () => Promise<T>): Promise<T> {
    const ms = this.#d.timeoutMs ?? PROBE_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ProbeTimeout(`no answer within ${ms / 1000} s`)), ms);
      timer.unref();
    });
    return Promise.race([fn(), late]).finally(() => clearTimeout(timer));
  }
}

function describe(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  const message = e instanceof Error ? e.message.split('\n')[0]!.slice(0, 300) : String(e);
  return typeof code === 'string' && !message.includes(code) ? `${code}: ${message}` : message;
}
