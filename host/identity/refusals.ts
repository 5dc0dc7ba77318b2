import { MINUTE, type Clock } from '../clock.ts';
import type { EventInput } from '../ledger/entry.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { Trx } from '../storage/db.ts';
import type { LimitKey, LimitLocksRepo, Unrecorded } from './limit-locks.repo.ts';
import type { RateLimits } from './rate-limits.ts';

/** Refusals of one client are written to the ledger at most this often, with a count. */
export const REFUSALS_RECORDED_EVERY_MS = MINUTE;

/** The event each kind of noted refusal becomes: one per client per minute at most. */
const EVENTS: Record<string, (u: Unrecorded, nowMs: number) => EventInput> = {
  token_client: (u, now) => ({
    type: 'identity.token_sign_in_refused',
    actor: 'anonymous',
    reason: `POST /v1/login from ${u.subject}: ${u.wrong} wrong admin token${u.wrong === 1 ? '' : 's'}${u.limited > 0 ? `, ${u.limited} refused unchecked while rate-limited` : ''}`,
    data: { client: u.subject, why: 'wrong_token', wrong: u.wrong, rate_limited: u.limited, first_at: new Date(u.firstMs ?? now).toISOString() },
  }),
  code_client: (u, now) => ({
    type: 'identity.code_rate_limited',
    actor: 'anonymous',
    reason: `POST /v1/auth/request from ${u.subject}: ${u.limited} request${u.limited === 1 ? '' : 's'} refused, too many codes asked for`,
    data: { client: u.subject, rate_limited: u.limited, first_at: new Date(u.firstMs ?? now).toISOString() },
  }),
};
export type RefusalKind = 'token_client' | 'code_client';

/**
 * Refusals that anyone can cause without limit (a wrong admin token, a request refused with
 * 429) are not each an event, or anyone could flood the ledger. They are counted on their
 * client's `auth_limits` row, under its lock; the first one after a quiet minute is written at
 * once, and what follows within the minute is written with its count when the minute is over
 * (by the next refusal, or by the tick). Nothing is lost and nothing is written twice, in any
 * number of host processes.
 */
export class Refusals {
  readonly #locks: LimitLocksRepo;
  readonly #limits: RateLimits;
  readonly #ledger: Ledger;
  readonly #clock: Clock;

  constructor(deps: { locks: LimitLocksRepo; limits: RateLimits; ledger: Ledger; clock: Clock }) {
    this.#locks = deps.locks;
    this.#limits = deps.limits;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
  }

  /** Inside a transaction holding `key`'s lock: counts refusals and writes the event when due. */
  async note(trx: Trx, record: RecordEvent, key: LimitKey & { kind: RefusalKind }, wrong: number, limited: number): Promise<void> {
    const now = this.#clock.now().getTime();
    await this.#locks.addUnrecorded(trx, key, wrong, limited, now);
    const u = await this.#locks.unrecorded(trx, key);
    if (u !== null && due(u, now)) await this.#record(trx, record, u, now);
  }

  /** Notes refusals in a transaction of its own (the caller holds no lock). */
  async noteAlone(key: LimitKey & { kind: RefusalKind }, wrong: number, limited: number): Promise<void> {
    await this.#limits.ensure([key]);
    await this.#ledger.transact(async (trx, record) => {
      await this.#limits.lock(trx, [key]);
      await this.note(trx, record, key, wrong, limited);
    });
  }

  /** The tick: writes what was noted within a minute of the last event, once that minute is over. */
  async recordDue(): Promise<void> {
    const now = this.#clock.now().getTime();
    for (const kind of Object.keys(EVENTS)) {
      for (const key of await this.#locks.due(kind, now - REFUSALS_RECORDED_EVERY_MS)) {
        await this.#ledger.transact(async (trx, record) => {
          await this.#limits.lock(trx, [key]);
          const u = await this.#locks.unrecorded(trx, key);
          if (u !== null && due(u, now)) await this.#record(trx, record, u, now);
        });
      }
    }
  }

  async #record(trx: Trx, record: RecordEvent, u: Unrecorded, now: number): Promise<void> {
    await record(EVENTS[u.kind]!(u, now));
    await this.#locks.recorded(trx, { kind: u.kind, subject: u.subject }, now);
  }
}

function due(u: Unrecorded, now: number): boolean {
  return u.wrong + u.limited > 0 && (u.recordedMs === null || now - u.recordedMs >= REFUSALS_RECORDED_EVERY_MS);
}
