import type { Db, Trx } from '../storage/db.ts';

export interface SiteKeyRow {
  hash: string;
  id: string;
  created_at: string;
  created_by: string;
  expires_ms: number;
  used_at: string | null;
  used_by: string | null;
}

/** The only code that touches `keychain_site_keys`. */
export class SiteKeysRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async insert(trx: Trx, row: SiteKeyRow): Promise<void> {
    await trx('keychain_site_keys').insert(row);
  }

  async byHash(trx: Trx, hash: string): Promise<SiteKeyRow | null> {
    const row = (await trx('keychain_site_keys').where({ hash }).first()) as SiteKeyRow | undefined;
    return row === undefined ? null : { ...row, expires_ms: Number(row.expires_ms) };
  }

  /** Marks the key used, once: false when another pairing used it first. */
  async use(trx: Trx, hash: string, at: string, by: string): Promise<boolean> {
    return Number(await trx('keychain_site_keys').where({ hash }).whereNull('used_at').update({ used_at: at, used_by: by })) === 1;
  }

  /** Keys still open at `nowMs`, newest first (never their secret: only its hash was kept). */
  async open(nowMs: number): Promise<SiteKeyRow[]> {
    const rows = (await this.#db('keychain_site_keys').whereNull('used_at').where('expires_ms', '>', nowMs).orderBy('created_at', 'desc')) as SiteKeyRow[];
    return rows.map((r) => ({ ...r, expires_ms: Number(r.expires_ms) }));
  }

  async clear(trx: Trx): Promise<void> {
    await trx('keychain_site_keys').delete();
  }
}
