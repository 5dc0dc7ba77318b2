import type { Db, Trx } from '../storage/db.ts';

export interface SsoTicket {
  ticket_hash: string;
  email: string;
  return_to: string;
  /** The provider's refresh token, sealed; null when it gave none. */
  refresh_token: string | null;
  created_ms: number;
  expires_ms: number;
}

/** The only code that touches `sso_tickets`: what the callback ends with, redeemed once within 60 s. */
export class SsoTicketsRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async insert(trx: Trx, row: SsoTicket): Promise<void> {
    await trx('sso_tickets').insert({ ...row, used_ms: null });
  }

  /** Redeems the ticket (one conditional update: exactly one of two redeems gets it), or says why not. */
  async redeem(trx: Trx, ticketHash: string, nowMs: number): Promise<SsoTicket | 'unknown' | 'replayed' | 'expired'> {
    const used = await trx('sso_tickets').where({ ticket_hash: ticketHash }).whereNull('used_ms').andWhere('expires_ms', '>', nowMs).update({ used_ms: nowMs });
    const row = (await trx('sso_tickets').where({ ticket_hash: ticketHash }).first()) as (SsoTicket & { used_ms: number | string | null }) | undefined;
    if (row === undefined) return 'unknown';
    if (used === 1) return { ...row, created_ms: Number(row.created_ms), expires_ms: Number(row.expires_ms) };
    return row.used_ms === null ? 'expired' : 'replayed';
  }

  async prune(beforeMs: number): Promise<number> {
    return this.#db('sso_tickets').where('expires_ms', '<', beforeMs).delete();
  }
}
