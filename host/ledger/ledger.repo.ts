import { dialect, type Db, type Trx } from '../storage/db.ts';
import type { ChainHead, StoredEntry } from './entry.ts';

/** Filters of GET /v1/ledger; every one optional. */
export interface LedgerFilter {
  type?: string;
  actor?: string;
  trace?: string;
  q?: string;
  beforeSeq?: number;
  afterSeq?: number;
  limit: number;
  order: 'asc' | 'desc';
}

export interface Checkpoint {
  seq: number;
  hash: string;
  at: string;
  signature: string;
}

const COLUMNS = ['seq', 'at', 'type', 'actor', 'reason', 'data', 'trace', 'prev_hash', 'hash'] as const;
const INSERT_CHUNK = 200;

/** LIKE pattern that matches `text` literally (`!` is the escape character). */
function literal(text: string): string {
  return text.replace(/[!%_]/g, (c) => `!${c}`);
}

/** The only code that touches ledger_events, ledger_head and ledger_checkpoints. */
export class LedgerRepo {
  readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  /** Reads the head inside `trx`, locking it on MySQL so appends from every process queue here. */
  async lockHead(trx: Trx): Promise<ChainHead> {
    const q = trx('ledger_head').select('seq', 'hash').where({ id: 1 });
    const row = (await (dialect(this.db) === 'mysql' ? q.forUpdate() : q).first()) as ChainHead | undefined;
    if (row === undefined) throw new Error('ledger_head row is missing');
    return { seq: Number(row.seq), hash: row.hash };
  }

  async insert(trx: Trx, rows: StoredEntry[], head: ChainHead): Promise<void> {
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) await trx('ledger_events').insert(rows.slice(i, i + INSERT_CHUNK));
    await trx('ledger_head').where({ id: 1 }).update({ seq: head.seq, hash: head.hash });
  }

  async head(): Promise<ChainHead> {
    const row = (await this.db('ledger_head').select('seq', 'hash').where({ id: 1 }).first()) as ChainHead | undefined;
    return row === undefined ? { seq: 0, hash: '0'.repeat(64) } : { seq: Number(row.seq), hash: row.hash };
  }

  /** One page of the filtered log plus whether more rows lie beyond it in the same direction. */
  async find(f: LedgerFilter): Promise<{ rows: StoredEntry[]; more: boolean }> {
    const q = this.db('ledger_events').select(...COLUMNS);
    if (f.type !== undefined) q.whereRaw("type like ? escape '!'", [`${literal(f.type)}%`]);
    if (f.actor !== undefined) q.whereRaw("actor like ? escape '!'", [`${literal(f.actor)}%`]);
    if (f.trace !== undefined) q.where('trace', f.trace);
    if (f.q !== undefined) {
      const pattern = `%${literal(f.q)}%`;
      q.where((w) => w.whereRaw("reason like ? escape '!'", [pattern]).orWhereRaw("data like ? escape '!'", [pattern]));
    }
    if (f.beforeSeq !== undefined) q.where('seq', '<', f.beforeSeq);
    if (f.afterSeq !== undefined) q.where('seq', '>', f.afterSeq);
    const rows = (await q.orderBy('seq', f.order).limit(f.limit + 1)) as StoredEntry[];
    const more = rows.length > f.limit;
    if (more) rows.pop();
    return { rows, more };
  }

  /** Rows with seq > afterSeq in order, `size` at a time: verify streams the chain with this. */
  async page(afterSeq: number, size: number): Promise<StoredEntry[]> {
    return (await this.db('ledger_events').select(...COLUMNS).where('seq', '>', afterSeq).orderBy('seq', 'asc').limit(size)) as StoredEntry[];
  }

  async lastSeq(): Promise<number> {
    const row = (await this.db('ledger_events').max({ seq: 'seq' }).first()) as { seq: number | null } | undefined;
    return row?.seq == null ? 0 : Number(row.seq);
  }

  async saveCheckpoint(cp: Checkpoint): Promise<void> {
    await this.db('ledger_checkpoints').insert(cp).onConflict('seq').ignore();
  }

  async checkpoints(): Promise<Checkpoint[]> {
    const rows = (await this.db('ledger_checkpoints').select('seq', 'hash', 'at', 'signature').orderBy('seq', 'asc')) as Checkpoint[];
    return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
  }

  async lastCheckpoint(): Promise<Checkpoint | null> {
    const row = (await this.db('ledger_checkpoints').select('seq', 'hash', 'at', 'signature').orderBy('seq', 'desc').first()) as Checkpoint | undefined;
    return row === undefined ? null : { ...row, seq: Number(row.seq) };
  }
}
