import { performance } from 'node:perf_hooks';

/** Checks run at once on this host when the event loop has room (4 investigations × 4 causes). */
export const GATE_MAX = 16;
/** Checks run at once however busy the loop is: investigations always move. */
export const GATE_MIN = 2;
/** The event loop's utilisation over a sample above which fewer checks are let in. */
export const GATE_BUSY = 0.75;
/** How often the loop's utilisation is sampled while checks run or wait. */
export const GATE_SAMPLE_MS = 100;

/** The loop's utilisation (0–1) since the previous call: Node's `performance.eventLoopUtilization`. */
export function loopUtilisation(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const u = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    return u;
  };
}

/**
 * How many checks this host runs at once, across every investigation: the service has one event
 * loop, and intake, the API and the console share it with the checks (evidence building, the
 * readers' answers). While the loop was busy over the last sample (utilisation above GATE_BUSY)
 * the number let in is halved, down to GATE_MIN; while it had room it grows by one per sample, up
 * to GATE_MAX. So a wave of investigations takes the loop when nothing else needs it and gives
 * way to intake when alerts pour in (docs/investigation.md, "How many checks run at once"). A
 * check waiting on a slow read leaves the loop idle, so the number grows again: a hung connector
 * cannot hold the others back for long.
 */
export class CheckGate {
  readonly #sample: () => number;
  readonly #sampleMs: number;
  readonly #waiting: Array<() => void> = [];
  #limit = GATE_MAX;
  #active = 0;
  #timer: NodeJS.Timeout | null = null;

  constructor(o: { utilisation?: () => number; sampleMs?: number } = {}) {
    this.#sample = o.utilisation ?? loopUtilisation();
    this.#sampleMs = o.sampleMs ?? GATE_SAMPLE_MS;
  }

  /** Checks let in at once now. */
  get limit(): number {
    return this.#limit;
  }

  /** Checks running now. */
  get active(): number {
    return this.#active;
  }

  /** Waits for a place; the function returned gives it back (call it once the check is done). */
  async enter(): Promise<() => void> {
    if (this.#active >= this.#limit) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#active++;
    this.#watch();
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.#active--;
      this.#admit();
    };
  }

  /** Samples the loop and moves the limit (the timer calls it; tests call it with their own utilisation). */
  adjust(): void {
    const u = this.#sample();
    this.#limit = u > GATE_BUSY ? Math.max(GATE_MIN, Math.floor(this.#limit / 2)) : Math.min(GATE_MAX, this.#limit + 1);
    this.#admit();
  }

  #admit(): void {
    while (this.#active < this.#limit && this.#waiting.length > 0) {
      this.#active++;
      this.#waiting.shift()!();
    }
  }

  /** Samples every GATE_SAMPLE_MS while checks run or wait; no timer while none do. */
  #watch(): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => {
      this.adjust();
      if (this.#active === 0 && this.#waiting.length === 0) {
        clearInterval(this.#timer!);
        this.#timer = null;
      }
    }, this.#sampleMs);
    this.#timer.unref();
  }
}
