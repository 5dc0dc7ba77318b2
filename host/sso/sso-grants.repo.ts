import type { Db, Trx } from '../storage/db.ts';

export interface SsoGrant {
  email: string;
  /** Sealed. */
  refresh_token: string;
  issuer: string;
  next_check_ms: number;
  updated_ms: number;
}

/** The only code that touches `sso_grants`: each person's refresh token and when it is next tried. */
export class SsoGrantsRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async put(trx: Trx | null, g: SsoGrant): Promise<void> {
    await (trx ?? this.#db)('sso_grants').insert(g).onConflict('email').merge();
  }

  async due(nowMs: number, limit = 100): Promise<SsoGrant[]> {
    const rows = (await this.#db('sso_grants').where('next_check_ms', '<=', nowMs).orderBy('next_check_ms').limit(limit)) as SsoGrant[];
    return rows.map((r) => ({ ...r, next_check_ms: Number(r.next_check_ms), updated_ms: Number(r.updated_ms) }));
  }

  async remove(trx: Trx | null, email: string): Promise<void> {
    await (trx ?? this.#db)('sso_grants').where({ email }).delete();
  }
}
