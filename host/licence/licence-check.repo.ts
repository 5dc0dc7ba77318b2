import type { Db, Trx } from '../storage/db.ts';
import type { LicenceCheckRow } from './licence-check.ts';

type Row = Omit<LicenceCheckRow, 'next_due_ms'> & { next_due_ms: number | string };
const fromRow = (r: Row): LicenceCheckRow => ({ ...r, id: Number(r.id), next_due_ms: Number(r.next_due_ms) });

/** The only code that touches `licence_check` (one row, id 1). */
export class LicenceCheckRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async get(trx?: Trx): Promise<LicenceCheckRow | null> {
    const row = (await (trx ?? this.#db)('licence_check').where({ id: 1 }).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }

  async ensure(): Promise<void> {
    await this.#db('licence_check').insert({ id: 1, next_due_ms: 0 }).onConflict('id').ignore();
  }

  /** A new licence in force: its confirmation starts over (a revocation of another licence stays). */
  async reset(ref: string, at: string): Promise<void> {
    await this.#db('licence_check')
      .where({ id: 1 })
      .andWhere((w) => void w.whereNull('licence_ref').orWhereNot('licence_ref', ref))
      .update({ licence_ref: ref, next_due_ms: 0, last_confirmed_at: null, last_result: null, last_problem: null, unconfirmed_since: at, claimed_by: null });
  }

  /** Takes the period that is due: true for exactly one caller across every host process. */
  async claim(ref: string, nowMs: number, nextMs: number, me: string, at: string): Promise<boolean> {
    const n = await this.#db('licence_check')
      .where({ id: 1, licence_ref: ref })
      .andWhere('next_due_ms', '<=', nowMs)
      .update({ next_due_ms: nextMs, last_attempt_at: at, claimed_by: me });
    return n === 1;
  }

  async finish(trx: Trx, ref: string, patch: Partial<Omit<LicenceCheckRow, 'id' | 'licence_ref'>>): Promise<void> {
    await trx('licence_check').where({ id: 1, licence_ref: ref }).update(patch);
  }
}
