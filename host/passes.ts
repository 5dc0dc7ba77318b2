/**
 * The passes of one background worker (the investigation, acting): `nudge()` asks for a pass
 * soon, and nudges in a row make one pass; `run()` runs one now, after any running one (passes
 * never overlap; tests await it); `stop()` ends the nudging and waits for the running pass.
 */
export class Passes {
  readonly #pass: () => Promise<void>;
  readonly #failed: (err: unknown) => void;
  readonly #delayMs: number;
  #running: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | null = null;
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
    if (this.#stopped || this.#timer !== null) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.run().catch(this.#failed);
    }, this.#delayMs);
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
