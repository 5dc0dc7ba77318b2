import { dialect, type Db, type Trx } from '../storage/db.ts';
import type { Level } from './levels.ts';

export interface StoredLevel {
  service: string;
  level: Level;
  changed_at: string;
  changed_by: string;
}

/** The only code that touches `autonomy_levels`: the levels people have set, per service. */
export class AutonomyRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async all(): Promise<StoredLevel[]> {
    return (await this.#db('autonomy_levels').select('service', 'level', 'changed_at', 'changed_by').orderBy('service')) as StoredLevel[];
  }

  async get(service: string): Promise<StoredLevel | null> {
    return (
      ((await this.#db('autonomy_levels').select('service', 'level', 'changed_at', 'changed_by').where({ service }).first()) as StoredLevel | undefined) ?? null
    );
  }

  /** The stored level of `service`, locked on MySQL for the rest of `trx`. */
  async lock(trx: Trx, service: string): Promise<StoredLevel | null> {
    const q = trx('autonomy_levels').select('service', 'level', 'changed_at', 'changed_by').where({ service });
    const row = (await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q).first()) as StoredLevel | undefined;
    return row ?? null;
  }

  async set(trx: Trx, row: StoredLevel): Promise<void> {
    await trx('autonomy_levels').insert(row).onConflict('service').merge();
  }
}
