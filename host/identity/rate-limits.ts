import { MINUTE, type Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Trx } from '../storage/db.ts';
import type { UnitOfWork } from '../storage/unit-of-work.ts';
import type { AttemptsRepo } from './attempts.repo.ts';
import type { LimitKey, LimitLocksRepo } from './limit-locks.repo.ts';
import { isDeadlock } from '../storage/failures.ts';

/** Every sign-in limit: at most `limit` counted attempts per subject in `windowMs`. */
export const LIMITS = {
  /** Codes asked for one address. */
  code_address: { limit: 3, windowMs: 10 * MINUTE },
  /** Code requests from one client address. */
  code_client: { limit: 20, windowMs: 10 * MINUTE },
  /** Code checks (POST /v1/auth/verify) from one client address. */
  verify_client: { limit: 30, windowMs: 10 * MINUTE },
  /** Password tries from one client address. */
  password_client: { limit: 30, windowMs: 10 * MINUTE },
  /** Wrong passwords for one address before it is locked. */
  password_wrong: { limit: 5, windowMs: 15 * MINUTE },
  /** A lock of one address after too many wrong passwords. */
  password_lock: { limit: 1, windowMs: 15 * MINUTE },
  /** Wrong admin tokens at POST /v1/login from one client address. */
  token_client: { limit: 30, windowMs: 10 * MINUTE },
  /** Directory passwords (POST /v1/auth/ldap) from one client address. */
  ldap_client: { limit: 20, windowMs: 10 * MINUTE },
  /** Failed directory passwords for one sign-in name (any of its spellings). */
  ldap_name: { limit: 5, windowMs: 10 * MINUTE },
  /**
   * Single sign-on starts and callbacks from one client address (ours: each start keeps a row for
   * ten minutes and each refused callback is an event). High enough for an office behind one
   * address signing in at nine (two per sign-in); SERVICE_TRUSTED_PROXIES names the real client.
   */
  sso_client: { limit: 300, windowMs: 10 * MINUTE },
  /** Single sign-on tickets redeemed from one client address (ours: each failure is an event). */
  redeem_client: { limit: 150, windowMs: 10 * MINUTE },
  /** Pairings offered to the keychain's home from one client address (ours: each refusal is an event). */
  keychain_pair_client: { limit: 20, windowMs: 10 * MINUTE },
} as const;
export type LimitKind = keyof typeof LIMITS;

/** The lock that guards every count about one address's password (wrong tries and the lock). */
export const passwordAddress = (email: string): LimitKey => ({ kind: 'password_address', subject: email });
export const limitKey = (kind: LimitKind, subject: string): LimitKey => ({ kind, subject });

/** Deadlocks making the lock rows are retried this many times (a unit of work retries its own). */
const DEADLOCK_TRIES = 5;

/**
 * Counting attempts against the limits, with the injected clock. A check and the count that
 * follows it are one step: both run in one transaction holding the lock of every subject they
 * concern (`auth_limits`), so the limits hold exactly whatever the engine and however many host
 * processes share the database. Nothing here reads a count and writes later outside a lock.
 */
export class RateLimits {
  readonly #repo: AttemptsRepo;
  readonly #locks: LimitLocksRepo;
  readonly #clock: Clock;
  readonly #work: UnitOfWork;

  constructor(deps: { repo: AttemptsRepo; locks: LimitLocksRepo; clock: Clock; work: UnitOfWork }) {
    this.#repo = deps.repo;
    this.#locks = deps.locks;
    this.#clock = deps.clock;
    this.#work = deps.work;
  }

  /** Runs `fn` in a transaction of its own holding the locks of `keys` (the unit of work runs it again after a deadlock). */
  async atomically<T>(keys: LimitKey[], fn: (trx: Trx) => Promise<T>): Promise<T> {
    const now = this.#clock.now().getTime();
    await this.#ensure(keys, now);
    return this.#transaction(async (trx) => {
      await this.#locks.lock(trx, keys, now);
      return fn(trx);
    });
  }

  /**
   * On MySQL in READ COMMITTED: each count reads what is committed when it runs, so a count taken
   * after a lock sees every attempt its holder before added, even when the transaction read
   * something before taking that lock (REPEATABLE READ would answer from its first snapshot).
   */
  async #transaction<T>(fn: (trx: Trx) => Promise<T>): Promise<T> {
    return this.#work.run(fn, { readCommitted: true });
  }

  /**
   * Locks `keys` inside a transaction the caller runs (one that also writes the ledger). Lock
   * first, before any read: on MySQL that transaction is REPEATABLE READ, whose reads answer
   * from the snapshot its first read took.
   */
  async lock(trx: Trx, keys: LimitKey[]): Promise<void> {
    await this.#locks.lock(trx, keys, this.#clock.now().getTime());
  }

  /** Makes sure the lock rows exist before a transaction that locks them (see LimitLocksRepo). */
  async ensure(keys: LimitKey[]): Promise<void> {
    await this.#ensure(keys, this.#clock.now().getTime());
  }

  async #ensure(keys: LimitKey[], now: number): Promise<void> {
    // One statement per key: a statement holding one new row while it waits for another could deadlock.
    for (const k of keys) {
      for (let attempt = 1; ; attempt++) {
        try {
          await this.#locks.ensure([k], now);
          break;
        } catch (err) {
          if (!isDeadlock(err) || attempt === DEADLOCK_TRIES) throw err;
        }
      }
    }
  }

  /**
   * Checks every limit given and counts one attempt against each, as one step: either all
   * allow it and all count it, or it is refused with 429 and Retry-After and none counts it.
   * The subjects are locked and checked in the order given, and the first refusal stops there:
   * a request the first limit refuses (the client's) never creates or locks a row for the next
   * (an address), so refused requests cannot fill the table. Every caller of one set of kinds
   * gives them in the same order, so they cannot deadlock.
   */
  async take(items: Array<[LimitKind, string]>): Promise<void> {
    const now = this.#clock.now().getTime();
    const keys = items.map(([kind, subject]) => limitKey(kind, subject));
    await this.#ensure(keys.slice(0, 1), now);
    const wait = await this.#transaction(async (trx) => {
      for (const [i, [kind, subject]] of items.entries()) {
        await this.#locks.lock(trx, [keys[i]!], now);
        const w = await this.wait(trx, kind, subject);
        if (w > 0) return w;
      }
      for (const [kind, subject] of items) await this.count(trx, kind, subject);
      return 0;
    });
    if (wait > 0) throw rateLimited(wait);
  }

  /**
   * Seconds until `kind` allows `subject` again, or 0 when it does now (`q` null: outside any
   * transaction). A decision taken on it must be taken under the subject's lock (atomically /
   * lock), or it is only a hint.
   */
  async wait(q: Trx | null, kind: LimitKind, subject: string): Promise<number> {
    const { limit, windowMs } = LIMITS[kind];
    const now = this.#clock.now().getTime();
    const { count, oldest } = await this.#repo.since(q, kind, subject, now - windowMs + 1);
    if (count < limit || oldest === null) return 0;
    return Math.max(1, Math.ceil((oldest + windowMs - now) / 1000));
  }

  async count(q: Trx | null, kind: LimitKind, subject: string): Promise<void> {
    await this.#repo.add(q, kind, subject, this.#clock.now().getTime());
  }

  async clear(q: Trx | null, kind: LimitKind, subject: string): Promise<void> {
    await this.#repo.clear(q, kind, subject);
  }

  /** Forgets counted attempts, and lock rows with nothing left to record, older than `beforeMs` (longer than every window). */
  async prune(beforeMs: number): Promise<void> {
    await this.#repo.prune(beforeMs);
    await this.#locks.prune(beforeMs);
  }
}

export function rateLimited(waitS: number): AppError {
  return new AppError('rate_limited', `too many attempts: try again in ${waitS} s`, { 'Retry-After': String(waitS) });
}
