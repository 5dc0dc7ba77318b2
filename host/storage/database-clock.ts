import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import { dialect, type Db } from './db.ts';

/** Smaller differences are hosts that agree (NTP): the service's clock is then used as it is. */
export const IGNORED_OFFSET_MS = 1000;

/**
 * The one clock leases are judged by. On SQLite (one host) it is the service's clock. On
 * MySQL/MariaDB, where several hosts judge each other's leases, it is the service's clock plus the
 * measured difference between the database's `NOW()` and this host's real clock, so every host
 * reads the database's time, while a test's injected clock still moves it (the difference is
 * between real clocks). Measured at start and on every tick; a difference under
 * IGNORED_OFFSET_MS counts as none. See docs/operations.md, "Clocks".
 */
export class DatabaseClock implements Clock {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #realNow: () => number;
  #offsetMs = 0;

  /** `realNow`: this host's real clock, which the database's is compared with (a test gives one running ahead). */
  constructor(db: Db, clock: Clock, log: Logger, realNow: () => number = Date.now) {
    this.#db = db;
    this.#clock = clock;
    this.#log = log;
    this.#realNow = realNow;
  }

  now(): Date {
    return new Date(this.#clock.now().getTime() + this.#offsetMs);
  }

  /** The difference in force: the database's time minus this host's (0 on SQLite or when under IGNORED_OFFSET_MS). */
  get offsetMs(): number {
    return this.#offsetMs;
  }

  /** Reads the database's clock (MySQL/MariaDB) and keeps the difference to this host's. */
  async measure(): Promise<number> {
    if (dialect(this.#db) !== 'mysql') return 0;
    const before = this.#realNow();
    const [rows] = (await this.#db.raw('select unix_timestamp(now(3)) * 1000 as ms')) as [Array<{ ms: number | string }>];
    const after = this.#realNow();
    const measured = Math.round(Number(rows[0]!.ms) - (before + after) / 2);
    const offset = Math.abs(measured) < IGNORED_OFFSET_MS ? 0 : measured;
    if (offset !== this.#offsetMs)
      this.#log.warn(
        { offset_ms: measured },
        offset === 0
          ? "this host's clock agrees with the database's again"
          : "this host's clock differs from the database's: leases are judged by the database's",
      );
    this.#offsetMs = offset;
    return offset;
  }
}
