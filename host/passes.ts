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
