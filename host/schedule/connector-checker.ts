import { MINUTE, type Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import type { LeaseRepo } from './lease.repo.ts';
import type { ConnectorService } from '../connectors/connectors.service.ts';

/** How often every configured connector is re-checked. */
export const CHECK_EVERY_MS = 5 * MINUTE;
/** The lease of the scheduled checks: whoever holds it checks every connector once per interval. */
export const CHECK_LEASE = 'connectors:check';

export interface CheckerDeps {
  connectors: ConnectorService;
  leases: LeaseRepo;
  clock: Clock;
  log: Logger;
  /** This host process's name on the lease (the poller's). */
  holder: string;
  everyMs?: number;
}

/** What one round came to: null when it was not this process's turn. */
export interface CheckRound {
  checked: { name: string; ok: boolean | null; changed: boolean }[];
}

/**
 * Re-checks every configured connector on a schedule, so a connector that breaks shows its
 * problem (GET /v1/connectors `state`, `last_problem`) without anyone clicking Check.
 *
 * The app's tick calls `tick()`. A round is due when the lease `connectors:check` (in the
 * `leases` table) is free or has expired on the injected clock; taking it (one conditional
 * statement, host/schedule/lease.repo.ts) sets it to expire one interval later, so of several
 * host processes on one database exactly one checks, once per interval (5 minutes). Each check
 * is cut off at the connector's own timeout; the round runs in the background, so a slow
 * connector never holds up the rest of the tick (tests await `idle()`). A process checks
 * nothing in its first interval: the stored statuses stand until then, and a restart does not
 * call every system at once.
 */
export class ConnectorChecker {
  readonly #connectors: ConnectorService;
  readonly #leases: LeaseRepo;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #holder: string;
  readonly #everyMs: number;
  #round: Promise<CheckRound | null> | null = null;
  /** The first round comes one interval after this process started (the statuses stored still show meanwhile). */
  readonly #notBeforeMs: number;

  constructor(deps: CheckerDeps) {
    this.#connectors = deps.connectors;
    this.#leases = deps.leases;
    this.#clock = deps.clock;
    this.#log = deps.log.child({ component: 'connector-checks' });
    this.#holder = deps.holder;
    this.#everyMs = deps.everyMs ?? CHECK_EVERY_MS;
    this.#notBeforeMs = this.#clock.now().getTime() + this.#everyMs;
  }

  /** Starts a round when one is due and none is under way here; does not wait for it. */
  tick(): void {
    if (this.#round !== null) return;
    const round = this.#runIfDue()
      .catch((err: unknown) => {
        this.#log.error({ err }, 'scheduled connector checks failed');
        return null;
      })
      .finally(() => {
        this.#round = null;
      });
    this.#round = round;
  }

  /** Starts a round when due and waits for it (tests). */
  async runNow(): Promise<CheckRound | null> {
    this.tick();
    return (await this.#round) ?? null;
  }

  /** Waits for a round under way (tests, shutdown). */
  async idle(): Promise<void> {
    if (this.#round !== null) await this.#round;
  }

  async #runIfDue(): Promise<CheckRound | null> {
    const now = this.#clock.now().getTime();
    if (now < this.#notBeforeMs) return null;
    const lease = await this.#leases.get(CHECK_LEASE);
    if (lease !== null && lease.until_ms > now) return null;
    if (!(await this.#leases.take(CHECK_LEASE, this.#holder, this.#everyMs, now))) return null;
    const names = await this.#connectors.names();
    const checked = await Promise.all(
      names.map(async (name) => {
        try {
          return { name, ...(await this.#connectors.checkOnSchedule(name)) };
        } catch (err) {
          // Removed meanwhile, or the database failed: the next round tries again.
          this.#log.warn({ err, connector: name }, 'scheduled check of a connector failed');
          return { name, ok: null, changed: false };
        }
      }),
    );
    const problems = checked.filter((c) => c.ok === false).map((c) => c.name);
    this.#log.info({ connectors: names.length, problems }, 'connectors checked');
    return { checked };
  }
}
