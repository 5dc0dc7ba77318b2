import { dialect, type Db, type Trx } from '../storage/db.ts';
import { withStatements } from '../storage/sqlite-statements.ts';

const LATEST = 'select id, body, source, installed_by, installed_at from licences order by id desc limit 1';

export interface LicenceRow {
  id: number;
  body: string;
  source: 'api' | 'trial';
  installed_by: string;
  installed_at: string;
}

/** The only code that touches the `licences` table. */
export class LicenceRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Read on every request (the mode): on SQLite through a cached prepared statement. */
  async latest(trx?: Trx): Promise<LicenceRow | null> {
    const q = trx ?? this.#db;
    if (dialect(this.#db) === 'sqlite') return ((await withStatements(q, ({ sql }) => sql(LATEST).get())) as LicenceRow | undefined) ?? null;
    return ((await q('licences').orderBy('id', 'desc').first()) as LicenceRow | undefined) ?? null;
  }

  async insert(trx: Trx, row: Omit<LicenceRow, 'id'>): Promise<void> {
    await trx('licences').insert(row);
  }
}
