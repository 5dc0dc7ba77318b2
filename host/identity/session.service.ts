import { createHash, randomBytes } from 'node:crypto';
import { DAY, HOUR, MINUTE, type Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { SessionAuthenticator, SessionPrincipal } from './principal.ts';
import type { Trx } from '../storage/db.ts';
import type { SessionRow, SessionsRepo, SessionVia } from './sessions.repo.ts';

export const IDLE_MS = 12 * HOUR;
export const MAX_AGE_MS = 7 * DAY;
/** last_seen is written at most this often: a request is not a write. */
const TOUCH_EVERY_MS = MINUTE;

/** Whether the access policy admits an address now (identity/access.service.ts). */
export interface AccessCheck {
  allows(email: string): Promise<boolean>;
}

export const hashToken = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/**
 * Sessions: 256-bit tokens from the CSPRNG, of which only the SHA-256 is stored. Every request
 * checks the session, its person (enabled, role) and the access policy; a session that fails
 * any of them is ended there and then, with the reason.
 */
export class SessionService implements SessionAuthenticator {
  readonly #repo: SessionsRepo;
  readonly #clock: Clock;
  readonly #access: AccessCheck;

  constructor(deps: { repo: SessionsRepo; clock: Clock; access: AccessCheck }) {
    this.#repo = deps.repo;
    this.#clock = deps.clock;
    this.#access = deps.access;
  }

  /** Opens a session inside `trx`; answers the token, which is never stored. */
  async open(
    trx: Trx,
    s: { email: string | null; actor: string; via: SessionVia; endsNoLaterThan?: number | null },
  ): Promise<{ token: string; row: SessionRow }> {
    const token = randomBytes(32).toString('base64url');
    const now = this.#clock.now().getTime();
    const ends = Math.min(now + MAX_AGE_MS, s.endsNoLaterThan ?? Infinity);
    const row: SessionRow = {
      token_hash: hashToken(token),
      email: s.email,
      actor: s.actor,
      via: s.via,
      created_ms: now,
      last_seen_ms: now,
      ends_ms: ends,
      ended_ms: null,
      end_reason: null,
    };
    await this.#repo.insert(trx, row);
    return { token, row };
  }

  async authenticate(token: string): Promise<SessionPrincipal | null> {
    const s = await this.#repo.find(hashToken(token));
    if (s === null) return null;
    const now = this.#clock.now().getTime();
    const ended = async (reason: string, why: string): Promise<never> => {
      await this.#repo.end(null, s.token_hash, now, reason);
      throw new AppError('unauthorized', `the session has ended: ${why}`);
    };
    if (s.ended_ms !== null) throw new AppError('unauthorized', `the session has ended: ${describe(s.end_reason)}`);
    if (now >= s.ends_ms) {
      const cut = s.ends_ms < s.created_ms + MAX_AGE_MS;
      const reason = cut && s.via === 'password' ? 'password_ended' : cut && s.via === 'sso' ? 'sso_recheck' : 'max_age';
      await ended(reason, describe(reason));
    }
    if (now - s.last_seen_ms >= IDLE_MS) await ended('idle', describe('idle'));
    let role: SessionPrincipal['role'] = 'owner';
    if (s.email !== null) {
      if (s.role === null || s.enabled !== true) await ended('disabled', describe('disabled'));
      if (!(await this.#access.allows(s.email))) await ended('access_policy', describe('access_policy'));
      role = s.role!;
    }
    if (now - s.last_seen_ms >= TOUCH_EVERY_MS) await this.#repo.touch(s.token_hash, now);
    const profile = s.email === null ? null : { name: s.name ?? '', teams: s.teams, tags: s.tags };
    return { kind: 'session', actor: s.actor, role, email: s.email, tokenHash: s.token_hash, breakGlass: s.via === 'break_glass', profile };
  }

  /** Ends one session now, for `reason`. */
  async end(tokenHash: string, reason: string): Promise<void> {
    await this.#repo.end(null, tokenHash, this.#clock.now().getTime(), reason);
  }

  async logout(tokenHash: string): Promise<void> {
    await this.#repo.end(null, tokenHash, this.#clock.now().getTime(), 'logout');
  }

  /** Ends every session of a person (disabled, role changed, password removed). */
  async endFor(trx: Trx, email: string, reason: string, via?: SessionVia): Promise<number> {
    return this.#repo.endFor(trx, email, this.#clock.now().getTime(), reason, via);
  }

  /** Ends every open session opened a given way (mixed mode turned off ends those of codes and passwords). */
  async endVia(trx: Trx, via: SessionVia, reason: string): Promise<number> {
    return this.#repo.endVia(trx, via, this.#clock.now().getTime(), reason);
  }

  /** Ends every break-glass session (break-glass has closed: e-mail works). */
  async endBreakGlass(trx: Trx): Promise<number> {
    return this.#repo.endVia(trx, 'break_glass', this.#clock.now().getTime(), 'break_glass_closed');
  }

  async endOutside(trx: Trx, allows: (email: string) => boolean, atMs: number): Promise<number> {
    return this.#repo.endOutside(trx, allows, atMs);
  }

  async prune(): Promise<number> {
    return this.#repo.prune(this.#clock.now().getTime() - 30 * DAY);
  }
}

/** Words for why a session ended, for the person it happened to. */
export function describe(reason: string | null): string {
  switch (reason) {
    case 'idle':
      return 'no activity for 12 hours';
    case 'max_age':
      return 'sessions last at most 7 days';
    case 'password_ended':
      return 'the password that opened it has reached its end date';
    case 'password_removed':
      return 'the password that opened it was removed';
    case 'logout':
      return 'signed out';
    case 'disabled':
      return 'the account is disabled or no longer exists';
    case 'role_changed':
      return 'the role changed';
    case 'access_policy':
      return 'the access policy no longer admits this address';
    case 'sso_recheck':
      return 'single sign-on asks again after its recheck interval: sign in through the identity provider again';
    case 'directory':
      return 'the directory no longer puts this person in a mapped group';
    case 'provider_refused':
      return 'the identity provider no longer accepts this person';
    case 'local_sign_in_off':
      return 'sign-in by e-mailed code or password is off: sign in through single sign-on or the directory';
    case 'break_glass_closed':
      return 'break-glass has closed because e-mail works: sign in with your e-mail address';
    default:
      return reason ?? 'ended';
  }
}
