import type { Db, Trx } from '../storage/db.ts';

/** The only code that touches `licence_limit_reports` (services reported over the limit). */
export class LicenceLimitsRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async reported(): Promise<Map<string, string>> {
    const rows = (await this.#db('licence_limit_reports').select('service', 'reported_at')) as { service: string; reported_at: string }[];
    return new Map(rows.map((r) => [r.service, r.reported_at]));
  }

  /** Claims the report of `service` for `me`: true for exactly one claimant across host processes. */
  async claim(trx: Trx, service: string, at: string, me: string): Promise<boolean> {
    await trx('licence_limit_reports').insert({ service, reported_at: at, claim: me }).onConflict('service').ignore();
    const row = (await trx('licence_limit_reports').select('claim').where({ service }).first()) as { claim: string } | undefined;
    return row?.claim === me;
  }
}
