import { dialect, type Db, type Trx } from '../storage/db.ts';

/** One limit's subject: `code_client` + a client address, `password_address` + an e-mail, ... */
export interface LimitKey {
  kind: string;
  subject: string;
}

/** Refusals of one subject not yet in the ledger (see `auth_limits`). */
export interface Unrecorded {
  kind: string;
  subject: string;
  wrong: number;
  limited: number;
  firstMs: number | null;
  recordedMs: number | null;
}

const order = (a: LimitKey, b: LimitKey): number =>
  a.kind === b.kind ? (a.subject < b.subject ? -1 : a.subject > b.subject ? 1 : 0) : a.kind < b.kind ? -1 : 1;

/**
 * The only code that touches `auth_limits`: the row each check-and-count of a limit locks
 * first. On MySQL the lock is the row's exclusive lock (an upsert takes it whether the row was
 * there or not) and lasts until the transaction ends, in every host process; on SQLite the one
 * connection already runs one transaction at a time. Keys are locked in one order, so two
 * requests that need the same two rows cannot deadlock each other.
 */
export class LimitLocksRepo {
  readonly #db: Db;
  readonly #mysql: boolean;

  constructor(db: Db) {
    this.#db = db;
    this.#mysql = dialect(db) === 'mysql';
  }

  /** Makes sure the rows exist (outside any transaction, so the lock below never inserts in the common case). */
  async ensure(keys: LimitKey[], atMs: number): Promise<void> {
    if (keys.length === 0) return;
    await this.#db('auth_limits')
      .insert(keys.map((k) => ({ ...k, touched_ms: atMs })))
      .onConflict(['kind', 'subject'])
      .ignore();
  }

  /** Locks every key's row until `trx` ends (creating a row pruned since `ensure`). */
  async lock(trx: Trx, keys: LimitKey[], atMs: number): Promise<void> {
    for (const k of [...keys].sort(order)) {
      await trx('auth_limits').insert({ kind: k.kind, subject: k.subject, touched_ms: atMs }).onConflict(['kind', 'subject']).merge(['touched_ms']);
    }
  }

  /** The subject's unrecorded refusals, read under its lock. */
  async unrecorded(trx: Trx, key: LimitKey): Promise<Unrecorded | null> {
    const q = trx('auth_limits').where(key).first();
    const row = (await (this.#mysql ? q.forUpdate() : q)) as Record<string, unknown> | undefined;
    return row === undefined ? null : toUnrecorded(row);
  }

  /** Adds refusals to the subject's unrecorded counts (under its lock). */
  async addUnrecorded(trx: Trx, key: LimitKey, wrong: number, limited: number, atMs: number): Promise<void> {
    await trx('auth_limits')
      .where(key)
      .update({
        unrecorded_wrong: trx.raw('unrecorded_wrong + ?', [wrong]),
        unrecorded_limited: trx.raw('unrecorded_limited + ?', [limited]),
        first_unrecorded_ms: trx.raw('coalesce(first_unrecorded_ms, ?)', [atMs]),
      });
  }

  /** The counts have been written to the ledger at `atMs`. */
  async recorded(trx: Trx, key: LimitKey, atMs: number): Promise<void> {
    await trx('auth_limits').where(key).update({ unrecorded_wrong: 0, unrecorded_limited: 0, first_unrecorded_ms: null, recorded_ms: atMs });
  }

  /** Subjects of `kind` with refusals unrecorded whose last event is older than `beforeMs` (or none). */
  async due(kind: string, beforeMs: number): Promise<LimitKey[]> {
    const rows = (await this.#db('auth_limits')
      .select('kind', 'subject')
      .where({ kind })
      .andWhere((w) => w.where('unrecorded_wrong', '>', 0).orWhere('unrecorded_limited', '>', 0))
      .andWhere((w) => w.whereNull('recorded_ms').orWhere('recorded_ms', '<=', beforeMs))
      .limit(1000)) as LimitKey[];
    return rows;
  }

  /** Forgets rows untouched since `beforeMs` with nothing left to record. */
  async prune(beforeMs: number): Promise<number> {
    return this.#db('auth_limits').where('touched_ms', '<', beforeMs).andWhere({ unrecorded_wrong: 0, unrecorded_limited: 0 }).delete();
  }
}

function toUnrecorded(r: Record<string, unknown>): Unrecorded {
  const n = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
  return {
    kind: String(r.kind),
    subject: String(r.subject),
    wrong: Number(r.unrecorded_wrong),
    limited: Number(r.unrecorded_limited),
    firstMs: n(r.first_unrecorded_ms),
    recordedMs: n(r.recorded_ms),
  };
}
