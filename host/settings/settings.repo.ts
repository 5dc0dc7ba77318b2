import type { Db, Trx } from '../storage/db.ts';
import type { SettingsStore } from './settings.model.ts';

/**
 * The only code that touches `settings`: named JSON documents (mail, access, ...). Each area
 * reads and writes its own name through this repo; secrets inside are sealed by that area.
 */
export class SettingsRepo implements SettingsStore {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async get<T>(name: string, trx?: Trx): Promise<T | null> {
    const row = (await (trx ?? this.#db)('settings').select('value').where({ name }).first()) as { value: string } | undefined;
    return row === undefined ? null : (JSON.parse(row.value) as T);
  }

  /** Writes one document; `trx` null: alone, on the repo's own handle (one statement, atomic). */
  async put(trx: Trx | null, name: string, value: unknown, at: string): Promise<void> {
    await (trx ?? this.#db)('settings')
      .insert({ name, value: JSON.stringify(value), updated_at: at })
      .onConflict('name')
      .merge();
  }
}
