import type { Db, Trx } from '../storage/db.ts';
import type { Role } from '../http/guard.ts';

export interface Person {
  email: string;
  name: string;
  role: Role;
  teams: string[];
  tags: string[];
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

interface PersonRow extends Omit<Person, 'teams' | 'tags' | 'enabled'> {
  teams: string;
  tags: string;
  enabled: number | boolean;
}

const fromRow = (r: PersonRow): Person => ({ ...r, teams: JSON.parse(r.teams) as string[], tags: JSON.parse(r.tags) as string[], enabled: Boolean(r.enabled) });

/** The only code that touches the `people` table. */
export class PeopleRepo {
  readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  async count(trx?: Trx): Promise<number> {
    const row = (await (trx ?? this.db)('people').count({ n: '*' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  async get(email: string, trx?: Trx): Promise<Person | null> {
    const row = (await (trx ?? this.db)('people').where({ email }).first()) as PersonRow | undefined;
    return row === undefined ? null : fromRow(row);
  }

  async insert(trx: Trx, p: Person): Promise<void> {
    await trx('people').insert({ ...p, teams: JSON.stringify(p.teams), tags: JSON.stringify(p.tags) });
  }
}
