import type { Clock } from '../clock.ts';
import type { DoctorReport } from './doctor.service.ts';

/** How long GET /v1/doctor may answer with an earlier report. */
export const DOCTOR_REUSE_MS = 60_000;

/**
 * Keeps the last report for reuse within `maxAgeMs` of the injected clock; concurrent callers
 * share one run, and `fresh` always gets a run that started after it asked.
 */
export class DoctorReports {
  #last: { report: DoctorReport; atMs: number } | null = null;
  #running: Promise<DoctorReport> | null = null;

  readonly #run: () => Promise<DoctorReport>;
  readonly #clock: Clock;
  readonly #maxAgeMs: number;

  constructor(deps: { run: () => Promise<DoctorReport>; clock: Clock; maxAgeMs?: number }) {
    this.#run = deps.run;
    this.#clock = deps.clock;
    this.#maxAgeMs = deps.maxAgeMs ?? DOCTOR_REUSE_MS;
  }

  async get(fresh: boolean): Promise<DoctorReport> {
    const now = this.#clock.now().getTime();
    if (!fresh && this.#last !== null && now - this.#last.atMs <= this.#maxAgeMs && now >= this.#last.atMs) return this.#last.report;
    if (!fresh && this.#running !== null) return this.#running;
    const running = this.#run().then((report) => {
      this.#last = { report, atMs: now };
      return report;
    });
    this.#running = running;
    try {
      return await running;
    } finally {
      if (this.#running === running) this.#running = null;
    }
  }
}
