import type { Request } from 'restify';
import { AppError } from '../errors.ts';
import type { MachineTokens } from '../identity/tokens.ts';

export type Role = 'owner' | 'admin' | 'viewer';
const RANK: Record<Role, number> = { viewer: 1, admin: 2, owner: 3 };

/** Who is calling, as far as the API is concerned. Sessions of people join in a later issue. */
export type Principal = { kind: 'admin_token'; actor: 'admin-token'; role: 'owner' };

export type Mode = 'setup' | 'configuring' | 'operating';

export function bearerToken(req: Request): string | null {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return null;
  const m = /^Bearer +(\S+)\s*$/i.exec(h);
  return m === null ? null : m[1]!;
}

/** Authorisation checks every route calls before its logic. */
export class Guard {
  private readonly tokens: MachineTokens;
  private readonly mode: () => Promise<Mode>;

  constructor(tokens: MachineTokens, mode: () => Promise<Mode>) {
    this.tokens = tokens;
    this.mode = mode;
  }

  /** A session or the admin token; the ingest token opens nothing here. */
  bearer(req: Request): Principal {
    const token = bearerToken(req);
    if (token !== null && this.tokens.isAdmin(token)) return { kind: 'admin_token', actor: 'admin-token', role: 'owner' };
    throw new AppError('unauthorized');
  }

  /** The admin token and nothing else (bootstrap). */
  adminToken(req: Request): Principal {
    const token = bearerToken(req);
    if (token !== null && this.tokens.isAdmin(token)) return { kind: 'admin_token', actor: 'admin-token', role: 'owner' };
    throw new AppError('unauthorized');
  }

  /** Ingest endpoints: disabled without SERVICE_INGEST_TOKEN (decided before any token is looked at). */
  ingest(req: Request): { actor: 'ingest-token' } {
    if (!this.tokens.ingestEnabled) throw new AppError('ingest_disabled');
    const token = bearerToken(req);
    if (token !== null && this.tokens.isIngest(token)) return { actor: 'ingest-token' };
    throw new AppError('unauthorized');
  }

  role(principal: Principal, needed: Role): void {
    if (RANK[principal.role] < RANK[needed]) throw new AppError('forbidden', `needs the ${needed} role`);
  }

  async operating(): Promise<void> {
    if ((await this.mode()) !== 'operating') throw new AppError('not_operating');
  }
}
