import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * The passes of one background worker (grouping alerts into episodes, the investigation, acting):
 * `nudge()` asks for a pass soon, and nudges in a row make one pass; `runIn(ms)` asks for one
 * after `ms` unless one is due sooner; `run()` runs one now, after any running one (passes never
 * overlap; tests await it); `stop()` ends the nudging and waits for the running pass.
 */
export class Passes {
  readonly #pass: () => Promise<void>;
  readonly #failed: (err: unknown) => void;
  readonly #delayMs: number;
  #running: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | null = null;
  #timerAt = 0;
  #stopped = false;

  constructor(pass: () => Promise<void>, failed: (err: unknown) => void, delayMs = 50) {
    this.#pass = pass;
    this.#failed = failed;
    this.#delayMs = delayMs;
  }

  /** True once `stop()` was called: a pass stops between its items. */
  get stopped(): boolean {
    return this.#stopped;
  }

  nudge(): void {
    this.runIn(this.#delayMs);
  }

  /** A pass after `ms` of real time, unless one is already due sooner. */
  runIn(ms: number): void {
    const at = Date.now() + ms;
    if (this.#stopped || (this.#timer !== null && this.#timerAt <= at)) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.run().catch(this.#failed);
    }, ms);
    this.#timer.unref();
  }

  run(): Promise<void> {
    const next = this.#running.then(() => (this.#stopped ? undefined : this.#pass()));
    this.#running = next.catch(() => undefined);
    return next;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }
}

/**
 * How long a claim on work (an investigation, an action path's step, a notification being sent,
 * the daily digest being sent) lasts unless its holder renews it: short, so that another host
 * takes a dead host's work over within WORK_LEASE_MS + one tick (docs/operations.md, "Leases").
 */
export const WORK_LEASE_MS = 15_000;
/** How often a holder renews the claims of the work it is doing. */
export const RENEW_EVERY_MS = 5_000;

/**
 * Runs `work` while renewing its claims every RENEW_EVERY_MS (real time: the work takes real
 * time; `renew` reads the injected clock for the new expiry). A renewal that fails is reported
 * and tried again at the next turn; the work's own checks (is it still held?) decide the rest.
 */
export async function whileRenewing<T>(work: () => Promise<T>, renew: () => Promise<unknown>, failed: (err: unknown) => void): Promise<T> {
  const timer = setInterval(() => renew().catch(failed), RENEW_EVERY_MS);
  timer.unref();
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/**
 * A name for this process's claims of one kind of work, `<host name>:<pid>:<kind>:<random>`, so
 * that the database (and GET /v1/live, the doctor) says which host process holds what.
 */
export function holderName(kind: string): string {
  return `${hostname()}:${process.pid}:${kind}:${randomBytes(4).toString('hex')}`;
}
