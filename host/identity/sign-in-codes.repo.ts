import { dialect, type Db, type Trx } from '../storage/db.ts';

export interface CodeRow {
  id: number;
  email: string;
  code_hmac: string;
  created_ms: number;
  expires_ms: number;
  tries: number;
  used_ms: number | null;
}

/** The only code that touches `sign_in_codes`. Only an HMAC of each code is stored. */
export class SignInCodesRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async insert(trx: Trx | null, c: Omit<CodeRow, 'id'>): Promise<void> {
    await (trx ?? this.#db)('sign_in_codes').insert(c);
  }

  /** Codes of an address still usable at `nowMs`, locked on MySQL. */
  async usable(trx: Trx, email: string, nowMs: number, maxTries: number): Promise<CodeRow[]> {
    const q = trx('sign_in_codes').where({ email }).whereNull('used_ms').andWhere('expires_ms', '>', nowMs).andWhere('tries', '<', maxTries).orderBy('id');
    const rows = (await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q)) as Record<string, unknown>[];
    return rows.map((r) => ({
      ...(r as unknown as CodeRow),
      id: Number(r.id),
      created_ms: Number(r.created_ms),
      expires_ms: Number(r.expires_ms),
      tries: Number(r.tries),
      used_ms: r.used_ms === null ? null : Number(r.used_ms),
    }));
  }

  /** Uses a code once: false when another request used it first. */
  async use(trx: Trx, id: number, atMs: number): Promise<boolean> {
    return (await trx('sign_in_codes').where({ id }).whereNull('used_ms').update({ used_ms: atMs })) === 1;
  }

  async addTry(trx: Trx, ids: number[]): Promise<void> {
    if (ids.length > 0) await trx('sign_in_codes').whereIn('id', ids).increment('tries', 1);
  }

  async prune(beforeMs: number): Promise<number> {
    return this.#db('sign_in_codes').where('expires_ms', '<', beforeMs).delete();
  }
}
