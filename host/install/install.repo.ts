import { dialect, type Db, type Trx } from '../storage/db.ts';

export interface InstallRow {
  id: number;
  fingerprint: string;
  signing_public_key: string;
  signing_private_key: string;
  admin_token_hash: string | null;
  mode: string;
  trial_redeemed_at: string | null;
  created_at: string;
}

/** The only code that touches the `install` table (one row, id 1). */
export class InstallRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async get(trx?: Trx): Promise<InstallRow | null> {
    return ((await (trx ?? this.#db)('install').where({ id: 1 }).first()) as InstallRow | undefined) ?? null;
  }

  /** Reads the row inside `trx`, locking it on MySQL: changes made once per install queue here. */
  async lock(trx: Trx): Promise<InstallRow> {
    const q = trx('install').where({ id: 1 });
    const row = (await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q).first()) as InstallRow | undefined;
    if (row === undefined) throw new Error('install row is missing');
    return row;
  }

  /** Inserts the row unless another process got there first; the row that exists wins. */
  async insertIfAbsent(row: Omit<InstallRow, 'id'>): Promise<void> {
    await this.#db('install')
      .insert({ id: 1, ...row })
      .onConflict('id')
      .ignore();
  }

  /** Sets the admin token hash only if none is stored yet; true when this call set it. */
  async setAdminTokenHashIfUnset(hash: string): Promise<boolean> {
    return (await this.#db('install').where({ id: 1 }).whereNull('admin_token_hash').update({ admin_token_hash: hash })) === 1;
  }

  /** Compare-and-set of the recorded mode; true when this call moved it. */
  async moveMode(trx: Trx, from: string, to: string): Promise<boolean> {
    return (await trx('install').where({ id: 1, mode: from }).update({ mode: to })) === 1;
  }

  /** Marks the trial as used, once; false when it already was. */
  async markTrialRedeemed(trx: Trx, at: string): Promise<boolean> {
    return (await trx('install').where({ id: 1 }).whereNull('trial_redeemed_at').update({ trial_redeemed_at: at })) === 1;
  }
}
