import type { Clock } from '../clock.ts';
import type { TickSeen } from '../doctor/doctor.service.ts';

/**
 * When this process's background tick last got through. Its step runs last in the tick, so a
 * recorded run means every step before it passed too; a tick that fails earlier leaves the time
 * where it was, and doctor calls the schedules stalled after six missed intervals.
 */
export class TickMonitor {
  #lastRun: string | null = null;
  #lastError: string | null = null;
  readonly #clock: Clock;
  readonly #everyMs: number;

  constructor(deps: { clock: Clock; everyMs: number }) {
    this.#clock = deps.clock;
    this.#everyMs = deps.everyMs;
  }

  /** Runs the last step of the tick and records the tick as done (or the step's failure). */
  async last(step: () => Promise<void>): Promise<void> {
    try {
      await step();
      this.#lastError = null;
    } catch (e) {
      this.#lastError = e instanceof Error ? e.message : String(e);
      throw e;
    } finally {
      this.#lastRun = this.#clock.now().toISOString();
    }
  }

  seen(): TickSeen {
    return { last_run_at: this.#lastRun, last_error: this.#lastError, every_ms: this.#everyMs };
  }
}
