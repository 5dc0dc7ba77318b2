import type { Request } from 'restify';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { AdminPrincipal, Principal, Role, SessionAuthenticator, SessionPrincipal } from '../identity/principal.ts';
import type { MachineTokens } from '../identity/tokens.ts';
import type { Mode } from '../status/mode.ts';

const RANK: Record<Role, number> = { viewer: 1, admin: 2, owner: 3 };

const ADMIN: AdminPrincipal = { kind: 'admin_token', actor: 'admin-token', role: 'owner', email: null };

const OPERATING_HOLD_MS = 1000;

export function bearerToken(req: Request): string | null {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return null;
  const m = /^Bearer +(\S+)\s*$/i.exec(h);
  return m === null ? null : m[1]!;
}

/** Authorisation checks every route calls before its logic. */
export class Guard {
  readonly #tokens: MachineTokens;
  readonly #mode: () => Promise<Mode>;
  readonly #clock: Clock;
  readonly #sessions: SessionAuthenticator;
  /** When `operating` was last confirmed, in real and in service time. */
  #confirmed: { real: number; at: number } | null = null;

  constructor(deps: { tokens: MachineTokens; mode: () => Promise<Mode>; clock: Clock; sessions: SessionAuthenticator }) {
    this.#tokens = deps.tokens;
    this.#mode = deps.mode;
    this.#clock = deps.clock;
    this.#sessions = deps.sessions;
  }

  /** A session or the admin token; the ingest token opens nothing here. */
  async bearer(req: Request): Promise<Principal> {
    const token = bearerToken(req);
    if (token === null) throw new AppError('unauthorized');
    if (this.#tokens.isAdmin(token)) return ADMIN;
    const session = await this.#sessions.authenticate(token);
    if (session === null) throw new AppError('unauthorized');
    return session;
  }

  /** A session and nothing else (logout, the signed-in person). */
  async session(req: Request): Promise<SessionPrincipal> {
    const who = await this.bearer(req);
    if (who.kind !== 'session') throw new AppError('unauthorized', 'sign in first: the admin token is not a session');
    return who;
  }

  /** Bearer with at least this role. */
  async withRole(req: Request, needed: Role): Promise<Principal> {
    const who = await this.bearer(req);
    this.role(who, needed);
    return who;
  }

  /** The admin token and nothing else (bootstrap). */
  adminToken(req: Request): AdminPrincipal {
    const token = bearerToken(req);
    if (token !== null && this.#tokens.isAdmin(token)) return ADMIN;
    throw new AppError('unauthorized');
  }

  /** Ingest endpoints: disabled without SERVICE_INGEST_TOKEN (decided before any token is looked at). */
  ingest(req: Request): { actor: 'ingest-token' } {
    if (!this.#tokens.ingestEnabled) throw new AppError('ingest_disabled');
    const token = bearerToken(req);
    if (token !== null && this.#tokens.isIngest(token)) return { actor: 'ingest-token' };
    throw new AppError('unauthorized');
  }

  role(principal: Principal, needed: Role): void {
    if (RANK[principal.role] < RANK[needed]) throw new AppError('forbidden', `needs the ${needed} role`);
  }

  /**
   * 503 unless the install is operating. A confirmation holds for one second (of real time and
   * of service time both), so a stream of pushes does not read the licence for each one; a
   * licence change made by another host process is seen within that second.
   */
  async operating(): Promise<void> {
    const real = performance.now();
    const at = this.#clock.now().getTime();
    const c = this.#confirmed;
    if (c !== null && real - c.real < OPERATING_HOLD_MS && at >= c.at && at - c.at < OPERATING_HOLD_MS) return;
    if ((await this.#mode()) !== 'operating') {
      this.#confirmed = null;
      throw new AppError('not_operating');
    }
    this.#confirmed = { real, at };
  }
}
