import type { Db } from '../storage/db.ts';

/** The only code that touches `storage_probe`: one row, rewritten to prove the database takes writes. */
export class ProbeRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async write(at: string): Promise<void> {
    await this.#db('storage_probe').insert({ id: 1, at }).onConflict('id').merge(['at']);
  }
}
