import type { Role } from './principal.ts';
import { dialect, type Db, type Trx } from '../storage/db.ts';
import { withStatements } from '../storage/sqlite-statements.ts';

/** How a session was opened: an e-mailed code, a password, break-glass, single sign-on (OIDC) or a directory password. */
export type SessionVia = 'code' | 'password' | 'break_glass' | 'sso' | 'ldap';

export interface SessionRow {
  token_hash: string;
  email: string | null;
  actor: string;
  via: SessionVia;
  created_ms: number;
  last_seen_ms: number;
  ends_ms: number;
  ended_ms: number | null;
  end_reason: string | null;
}

/** A session with what the check of every request needs of its person (null: no person row). */
export interface SessionWithPerson extends SessionRow {
  role: Role | null;
  enabled: boolean | null;
  name: string | null;
  teams: string[];
  tags: string[];
}

// Scalar subqueries rather than a join: SQLite plans them as two primary-key probes, several
// times cheaper than its join here (docs/performance.md, bench:auth).
const person = (col: string): string => `(select p.${col} from people p where p.email = s.email) as ${col}`;
const WITH_PERSON = `select s.token_hash, s.email, s.actor, s.via, s.created_ms, s.last_seen_ms, s.ends_ms, s.ended_ms, s.end_reason,
  ${['role', 'enabled', 'name', 'teams', 'tags'].map(person).join(', ')}
  from sessions s where s.token_hash = ?`;

const num = (v: unknown): number => Number(v);
function fromRow(r: Record<string, unknown>): SessionWithPerson {
  return {
    token_hash: r.token_hash as string,
    email: (r.email as string | null) ?? null,
    actor: r.actor as string,
    via: r.via as SessionVia,
    created_ms: num(r.created_ms),
    last_seen_ms: num(r.last_seen_ms),
    ends_ms: num(r.ends_ms),
    ended_ms: r.ended_ms === null ? null : num(r.ended_ms),
    end_reason: (r.end_reason as string | null) ?? null,
    role: (r.role as Role | null) ?? null,
    enabled: r.enabled === null || r.enabled === undefined ? null : Boolean(r.enabled),
    name: (r.name as string | null) ?? null,
    teams: typeof r.teams === 'string' ? (JSON.parse(r.teams) as string[]) : [],
    tags: typeof r.tags === 'string' ? (JSON.parse(r.tags) as string[]) : [],
  };
}

/** The only code that touches `sessions`. Only the SHA-256 of each token is ever stored. */
export class SessionsRepo {
  readonly #db: Db;
  readonly #sqlite: boolean;

  constructor(db: Db) {
    this.#db = db;
    this.#sqlite = dialect(db) === 'sqlite';
  }

  async insert(trx: Trx, s: SessionRow): Promise<void> {
    await trx('sessions').insert(s);
  }

  /** Read on every request: on SQLite through a cached prepared statement. */
  async find(tokenHash: string): Promise<SessionWithPerson | null> {
    const row = this.#sqlite
      ? await withStatements(this.#db, ({ sql }) => sql(WITH_PERSON).get(tokenHash))
      : ((await this.#db.raw(WITH_PERSON, [tokenHash])) as unknown as [Record<string, unknown>[]])[0][0];
    return row === undefined ? null : fromRow(row as Record<string, unknown>);
  }

  async touch(tokenHash: string, atMs: number): Promise<void> {
    await this.#db('sessions').where({ token_hash: tokenHash }).whereNull('ended_ms').update({ last_seen_ms: atMs });
  }

  /** Ends one session; false when it had ended already. */
  async end(q: Trx | null, tokenHash: string, atMs: number, reason: string): Promise<boolean> {
    return (await (q ?? this.#db)('sessions').where({ token_hash: tokenHash }).whereNull('ended_ms').update({ ended_ms: atMs, end_reason: reason })) > 0;
  }

  /** Ends every open session of a person (or only those opened a given way). */
  async endFor(trx: Trx, email: string, atMs: number, reason: string, via?: SessionVia): Promise<number> {
    const q = trx('sessions').where({ email }).whereNull('ended_ms');
    if (via !== undefined) q.andWhere({ via });
    return q.update({ ended_ms: atMs, end_reason: reason });
  }

  /** Ends every open session opened a given way (break-glass, when it closes). */
  async endVia(trx: Trx, via: SessionVia, atMs: number, reason: string): Promise<number> {
    return trx('sessions').where({ via }).whereNull('ended_ms').update({ ended_ms: atMs, end_reason: reason });
  }

  /** Ends the open sessions of people `allows` no longer admits. */
  async endOutside(trx: Trx, allows: (email: string) => boolean, atMs: number): Promise<number> {
    const open = (await trx('sessions').distinct('email').whereNull('ended_ms').whereNotNull('email')) as { email: string }[];
    let ended = 0;
    for (const { email } of open) if (!allows(email)) ended += await this.endFor(trx, email, atMs, 'access_policy');
    return ended;
  }

  /** Forgets sessions that ended more than `beforeMs` ago (their end is in the ledger). */
  async prune(beforeMs: number): Promise<number> {
    return this.#db('sessions').where('ends_ms', '<', beforeMs).orWhere('ended_ms', '<', beforeMs).delete();
  }
}
