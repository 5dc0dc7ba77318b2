import type { Db, Trx } from '../storage/db.ts';

export interface SsoLogin {
  state_hash: string;
  /** The nonce and the PKCE verifier, sealed. */
  secrets: string;
  return_to: string;
  created_ms: number;
  expires_ms: number;
}

/** The only code that touches `sso_logins`: single sign-on logins under way, each used once. */
export class SsoLoginsRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async insert(row: SsoLogin): Promise<void> {
    await this.#db('sso_logins').insert({ ...row, used_ms: null });
  }

  /**
   * Uses the login of `stateHash` (one conditional update, so of two callbacks with the same
   * state exactly one gets it): the row, or why not (`unknown`, `used`, `expired`).
   */
  async use(trx: Trx, stateHash: string, nowMs: number): Promise<SsoLogin | 'unknown' | 'used' | 'expired'> {
    const used = await trx('sso_logins').where({ state_hash: stateHash }).whereNull('used_ms').andWhere('expires_ms', '>', nowMs).update({ used_ms: nowMs });
    const row = (await trx('sso_logins').where({ state_hash: stateHash }).first()) as (SsoLogin & { used_ms: number | string | null }) | undefined;
    if (row === undefined) return 'unknown';
    if (used === 1) return { ...row, created_ms: Number(row.created_ms), expires_ms: Number(row.expires_ms) };
    return Number(row.expires_ms) <= nowMs && row.used_ms === null ? 'expired' : 'used';
  }

  async prune(beforeMs: number): Promise<number> {
    return this.#db('sso_logins').where('expires_ms', '<', beforeMs).delete();
  }
}
