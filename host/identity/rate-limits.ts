import { MINUTE, type Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Db, Trx } from '../storage/db.ts';
import type { AttemptsRepo } from './attempts.repo.ts';

/** Every sign-in limit: at most `limit` counted attempts per subject in `windowMs`. */
export const LIMITS = {
  /** Codes asked for one address. */
  code_address: { limit: 3, windowMs: 10 * MINUTE },
  /** Code requests from one client address. */
  code_client: { limit: 20, windowMs: 10 * MINUTE },
  /** Password tries from one client address. */
  password_client: { limit: 30, windowMs: 10 * MINUTE },
  /** Wrong passwords for one address before it is locked. */
  password_wrong: { limit: 5, windowMs: 15 * MINUTE },
  /** A lock of one address after too many wrong passwords. */
  password_lock: { limit: 1, windowMs: 15 * MINUTE },
} as const;
export type LimitKind = keyof typeof LIMITS;

/** Counting attempts against the limits, with the injected clock. */
export class RateLimits {
  readonly #repo: AttemptsRepo;
  readonly #clock: Clock;

  constructor(repo: AttemptsRepo, clock: Clock) {
    this.#repo = repo;
    this.#clock = clock;
  }

  /** Seconds until `kind` allows `subject` again, or 0 when it does now. */
  async wait(q: Trx | Db, kind: LimitKind, subject: string): Promise<number> {
    const { limit, windowMs } = LIMITS[kind];
    const now = this.#clock.now().getTime();
    const { count, oldest } = await this.#repo.since(q, kind, subject, now - windowMs + 1);
    if (count < limit || oldest === null) return 0;
    return Math.max(1, Math.ceil((oldest + windowMs - now) / 1000));
  }

  /** Counts one attempt; over the limit it is refused with 429 and Retry-After (and not counted). */
  async take(q: Trx | Db, kind: LimitKind, subject: string): Promise<void> {
    const wait = await this.wait(q, kind, subject);
    if (wait > 0) throw rateLimited(wait);
    await this.count(q, kind, subject);
  }

  async count(q: Trx | Db, kind: LimitKind, subject: string): Promise<void> {
    await this.#repo.add(q, kind, subject, this.#clock.now().getTime());
  }

  async clear(q: Trx | Db, kind: LimitKind, subject: string): Promise<void> {
    await this.#repo.clear(q, kind, subject);
  }
}

export function rateLimited(waitS: number): AppError {
  return new AppError('rate_limited', `too many attempts: try again in ${waitS} s`, { 'Retry-After': String(waitS) });
}
