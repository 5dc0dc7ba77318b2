import { AppError } from '../errors.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import { rateLimited, type RateLimits } from './rate-limits.ts';
import type { Refusals } from './refusals.ts';
import type { SessionService } from './session.service.ts';

export interface AdminLoginDeps {
  /** Whether break-glass is open (mail/mail.service.ts). */
  breakGlass(): Promise<{ open: boolean; reason: string | null }>;
  sessions: SessionService;
  limits: RateLimits;
  refusals: Refusals;
  ledger: Ledger;
}

/**
 * The admin token at `POST /v1/login` once the first owner exists: a break-glass session while
 * no code can be sent, else 403 `use_email`. Wrong tokens are limited per client like every
 * other way in (30 per 10 minutes, then 429 for right and wrong alike), and recorded as
 * `identity.token_sign_in_refused` at most once a minute per client with the number refused
 * since the last such event (refusals.ts), so nobody can flood the ledger by guessing. The token is never
 * recorded. When break-glass closes, every break-glass session ends.
 */
export class AdminLoginService {
  readonly #d: AdminLoginDeps;
  readonly #limits: RateLimits;

  constructor(deps: AdminLoginDeps) {
    this.#d = deps;
    this.#limits = deps.limits;
  }

  /** Before the token is looked at: 429 while `client` has had too many wrong tokens. */
  async gate(client: string): Promise<void> {
    const key = { kind: 'token_client' as const, subject: client };
    if ((await this.#limits.wait(null, 'token_client', client)) === 0) return;
    await this.#limits.ensure([key]);
    const wait = await this.#d.ledger.transact(async (trx, record) => {
      await this.#limits.lock(trx, [key]);
      const w = await this.#limits.wait(trx, 'token_client', client);
      if (w > 0) await this.#d.refusals.note(trx, record, key, 0, 1);
      return w;
    });
    if (wait > 0) throw rateLimited(wait);
  }

  /** A wrong token from `client`: counted against its limit (one step under its lock), noted, refused. */
  async wrong(client: string): Promise<never> {
    const key = { kind: 'token_client' as const, subject: client };
    await this.#limits.ensure([key]);
    const wait = await this.#d.ledger.transact(async (trx, record) => {
      await this.#limits.lock(trx, [key]);
      const w = await this.#limits.wait(trx, 'token_client', client);
      if (w === 0) await this.#limits.count(trx, 'token_client', client);
      await this.#d.refusals.note(trx, record, key, w === 0 ? 1 : 0, w === 0 ? 0 : 1);
      return w;
    });
    if (wait > 0) throw rateLimited(wait);
    throw new AppError('unauthorized');
  }

  /** The right token once the first owner exists. */
  async login(client: string): Promise<{ break_glass: true; token: string }> {
    const { sessions, ledger } = this.#d;
    const glass = await this.#d.breakGlass();
    if (!glass.open) {
      await ledger.append({
        type: 'identity.token_sign_in_refused',
        actor: 'admin-token',
        reason: 'e-mail works: people sign in with their address',
        data: { client, why: 'use_email' },
      });
      throw new AppError('use_email', 'sign in with your e-mail address');
    }
    const opened = await ledger.transact(async (trx, record) => {
      const { token, row } = await sessions.open(trx, { email: null, actor: 'admin-token', via: 'break_glass' });
      await record({
        type: 'identity.break_glass',
        actor: 'admin-token',
        reason: `break-glass sign-in: ${glass.reason ?? 'no code can be sent'}`,
        data: { client, why: glass.reason },
      });
      return { token, tokenHash: row.token_hash };
    });
    // A send may have succeeded since break-glass was read, and ended the break-glass sessions
    // before this one committed. Read again: if it has closed, this session ends now; if it is
    // still open, a send that closes it later ends this session with the others.
    if (!(await this.#d.breakGlass()).open) {
      await sessions.end(opened.tokenHash, 'break_glass_closed');
      await ledger.append({
        type: 'identity.token_sign_in_refused',
        actor: 'admin-token',
        reason: 'e-mail started working during the sign-in: the break-glass session ended at once',
        data: { client, why: 'use_email' },
      });
      throw new AppError('use_email', 'sign in with your e-mail address');
    }
    return { break_glass: true as const, token: opened.token };
  }

  /** A send succeeded, so break-glass is closed: every break-glass session ends now. */
  async breakGlassClosed(): Promise<number> {
    return this.#d.ledger.transact(async (trx, record) => {
      const ended = await this.#d.sessions.endBreakGlass(trx);
      if (ended > 0) {
        await record({
          type: 'identity.break_glass_closed',
          actor: 'system',
          reason: 'e-mail works again: break-glass sessions ended',
          data: { sessions_ended: ended },
        });
      }
      return ended;
    });
  }
}
