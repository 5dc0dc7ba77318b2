import { dialect, type Db, type Trx } from '../storage/db.ts';
import { withStatements } from '../storage/sqlite-statements.ts';
import type { Role } from './principal.ts';
import type { Person, Suspension } from './people.model.ts';

/** What sign-in by password needs; never leaves the identity area. */
export interface PasswordRecord {
  hash: string;
  set_at: string;
  expires_at: string | null;
}

interface PersonRow {
  email: string;
  name: string;
  role: Role;
  teams: string;
  tags: string;
  enabled: number | boolean;
  directory: number | boolean;
  suspended: string | null;
  password_hash: string | null;
  password_set_at: string | null;
  password_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

const fromRow = (r: PersonRow): Person => ({
  email: r.email,
  name: r.name,
  role: r.role,
  teams: JSON.parse(r.teams) as string[],
  tags: JSON.parse(r.tags) as string[],
  enabled: Boolean(r.enabled),
  directory: Boolean(r.directory),
  suspended: (r.suspended as Suspension | null) ?? null,
  password_set: r.password_hash !== null,
  password_expires_at: r.password_hash === null ? null : r.password_expires_at,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

/** The columns a change may set (the password has its own method). */
export type PersonChange = Partial<Pick<Person, 'name' | 'role' | 'teams' | 'tags' | 'enabled' | 'directory' | 'suspended'>> & { updated_at: string };

/** The only code that touches the `people` table. */
export class PeopleRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async list(trx?: Trx): Promise<Person[]> {
    return ((await (trx ?? this.#db)('people').orderBy('email')) as PersonRow[]).map(fromRow);
  }

  /** The person, locked on MySQL for the rest of `trx`. */
  async lock(trx: Trx, email: string): Promise<Person | null> {
    const q = trx('people').where({ email });
    const row = (await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q).first()) as PersonRow | undefined;
    return row === undefined ? null : fromRow(row);
  }

  async update(trx: Trx, email: string, change: PersonChange): Promise<void> {
    const row: Record<string, unknown> = { ...change };
    if (change.teams !== undefined) row.teams = JSON.stringify(change.teams);
    if (change.tags !== undefined) row.tags = JSON.stringify(change.tags);
    await trx('people').where({ email }).update(row);
  }

  /** Enabled owners, locked on MySQL (the last-owner rule reads them). */
  async enabledOwners(trx: Trx): Promise<string[]> {
    const q = trx('people').select('email').where({ role: 'owner', enabled: true });
    return ((await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q)) as { email: string }[]).map((r) => r.email);
  }

  async password(email: string): Promise<PasswordRecord | null> {
    const row = (await this.#db('people').select('password_hash', 'password_set_at', 'password_expires_at').where({ email }).first()) as
      Pick<PersonRow, 'password_hash' | 'password_set_at' | 'password_expires_at'> | undefined;
    if (row?.password_hash == null) return null;
    return { hash: row.password_hash, set_at: row.password_set_at ?? '', expires_at: row.password_expires_at };
  }

  async setPassword(trx: Trx, email: string, p: PasswordRecord | null, at: string): Promise<void> {
    await trx('people')
      .where({ email })
      .update({ password_hash: p?.hash ?? null, password_set_at: p?.set_at ?? null, password_expires_at: p?.expires_at ?? null, updated_at: at });
  }

  async count(trx?: Trx): Promise<number> {
    const row = (await (trx ?? this.#db)('people').count({ n: '*' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  /** Read by sign-in on every code and password: on SQLite through a cached statement. */
  async get(email: string, trx?: Trx): Promise<Person | null> {
    const q = trx ?? this.#db;
    const row = (
      dialect(this.#db) === 'sqlite'
        ? await withStatements(q, ({ sql }) => sql('select * from people where email = ?').get(email))
        : await q('people').where({ email }).first()
    ) as PersonRow | undefined;
    return row === undefined ? null : fromRow(row);
  }

  async insert(trx: Trx, p: Person): Promise<void> {
    await trx('people').insert({
      email: p.email,
      name: p.name,
      role: p.role,
      teams: JSON.stringify(p.teams),
      tags: JSON.stringify(p.tags),
      enabled: p.enabled,
      directory: p.directory,
      suspended: p.suspended,
      created_at: p.created_at,
      updated_at: p.updated_at,
    });
  }
}
