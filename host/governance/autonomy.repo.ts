import { dialect, type Db, type Trx } from '../storage/db.ts';
import type { Level } from './levels.ts';

/** Who set a stored level: the API (a person, the admin token or an approved raise) or autonomy.json. */
export type LevelSource = 'api' | 'file';

export interface StoredLevel {
  service: string;
  level: Level;
  changed_at: string;
  changed_by: string;
  source: LevelSource;
}

const COLUMNS = ['service', 'level', 'changed_at', 'changed_by', 'source'] as const;

/** The only code that touches `autonomy_levels`: the levels set per service, and who set them. */
export class AutonomyRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Every stored level; inside `trx` locked on MySQL for the rest of it. */
  async all(trx?: Trx): Promise<StoredLevel[]> {
    if (trx === undefined)
      return (await this.#db('autonomy_levels')
        .select(...COLUMNS)
        .orderBy('service')) as StoredLevel[];
    const q = trx('autonomy_levels')
      .select(...COLUMNS)
      .orderBy('service');
    return (await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q)) as StoredLevel[];
  }

  async get(service: string): Promise<StoredLevel | null> {
    return (
      ((await this.#db('autonomy_levels')
        .select(...COLUMNS)
        .where({ service })
        .first()) as StoredLevel | undefined) ?? null
    );
  }

  /** The stored level of `service`, locked on MySQL for the rest of `trx`. */
  async lock(trx: Trx, service: string): Promise<StoredLevel | null> {
    const q = trx('autonomy_levels')
      .select(...COLUMNS)
      .where({ service });
    const row = (await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q).first()) as StoredLevel | undefined;
    return row ?? null;
  }

  /** The levels autonomy.json granted, by service. */
  async fromFile(): Promise<StoredLevel[]> {
    return (await this.#db('autonomy_levels')
      .select(...COLUMNS)
      .where({ source: 'file' })
      .orderBy('service')) as StoredLevel[];
  }

  async set(trx: Trx, row: StoredLevel): Promise<void> {
    await trx('autonomy_levels').insert(row).onConflict('service').merge();
  }

  /** Forgets a service's stored level: it runs at the policy's default again. */
  async remove(trx: Trx, service: string): Promise<void> {
    await trx('autonomy_levels').where({ service }).delete();
  }
}
