import type { Db, Trx } from '../storage/db.ts';

export interface LicenceRow {
  id: number;
  body: string;
  source: 'api' | 'trial';
  installed_by: string;
  installed_at: string;
}

/** The only code that touches the `licences` table. */
export class LicenceRepo {
  readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  async latest(trx?: Trx): Promise<LicenceRow | null> {
    return ((await (trx ?? this.db)('licences').orderBy('id', 'desc').first()) as LicenceRow | undefined) ?? null;
  }

  async insert(trx: Trx, row: Omit<LicenceRow, 'id'>): Promise<void> {
    await trx('licences').insert(row);
  }
}
