import type { Db, Trx } from '../storage/db.ts';
import type { Part } from './parts.ts';

/** A member's record of one part: the bundle applied last, and the last one refused with why. */
export interface AppliedRow {
  part: Part;
  applied_epoch: number | null;
  applied_version: number | null;
  applied_at: string | null;
  applied_from: string | null;
  refused_epoch: number | null;
  refused_version: number | null;
  refused_reason: string | null;
  refused_at: string | null;
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const fromRaw = (r: AppliedRow): AppliedRow => ({
  ...r,
  applied_epoch: num(r.applied_epoch),
  applied_version: num(r.applied_version),
  refused_epoch: num(r.refused_epoch),
  refused_version: num(r.refused_version),
});

export const EMPTY_APPLIED = (part: Part): AppliedRow => ({
  part,
  applied_epoch: null,
  applied_version: null,
  applied_at: null,
  applied_from: null,
  refused_epoch: null,
  refused_version: null,
  refused_reason: null,
  refused_at: null,
});

/** The only code that touches `keychain_parts`. */
export class AppliedRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async list(trx?: Trx): Promise<AppliedRow[]> {
    return ((await (trx ?? this.#db)('keychain_parts').select('*').orderBy('part')) as AppliedRow[]).map(fromRaw);
  }

  async get(part: Part, trx?: Trx): Promise<AppliedRow> {
    const row = (await (trx ?? this.#db)('keychain_parts').where({ part }).first()) as AppliedRow | undefined;
    return row === undefined ? EMPTY_APPLIED(part) : fromRaw(row);
  }

  async put(trx: Trx, row: AppliedRow): Promise<void> {
    await trx('keychain_parts').insert(row).onConflict('part').merge();
  }

  async clear(trx: Trx): Promise<void> {
    await trx('keychain_parts').delete();
  }
}
