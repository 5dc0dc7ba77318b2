import type { Db, Trx } from '../storage/db.ts';
import type { BundleWire } from './messages.ts';
import type { Part } from './parts.ts';

/** A bundle as kept: what travels, and the digest of its settings under the content key. */
export interface BundleRow extends BundleWire {
  digest: string;
}

type Raw = Omit<BundleRow, 'epoch' | 'version'> & { epoch: number | string; version: number | string };
const fromRaw = (r: Raw): BundleRow => ({ ...r, epoch: Number(r.epoch), version: Number(r.version) });

/** The only code that touches `keychain_bundles`. */
export class BundlesRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async list(trx?: Trx): Promise<BundleRow[]> {
    return ((await (trx ?? this.#db)('keychain_bundles').select('*').orderBy('part')) as Raw[]).map(fromRaw);
  }

  async get(part: Part, trx?: Trx): Promise<BundleRow | null> {
    const row = (await (trx ?? this.#db)('keychain_bundles').where({ part }).first()) as Raw | undefined;
    return row === undefined ? null : fromRaw(row);
  }

  async put(trx: Trx, b: BundleRow): Promise<void> {
    await trx('keychain_bundles').insert(b).onConflict('part').merge();
  }

  /** Forgets the bundles of parts not in `keep`. */
  async keepOnly(trx: Trx, keep: readonly Part[]): Promise<void> {
    const q = trx('keychain_bundles');
    await (keep.length === 0 ? q : q.whereNotIn('part', [...keep])).delete();
  }

  async clear(trx: Trx): Promise<void> {
    await trx('keychain_bundles').delete();
  }
}
