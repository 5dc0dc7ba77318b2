import type { Knex } from 'knex';
import { dialect, type Db, type Trx } from '../storage/db.ts';
import { RECORDED_BY } from './caller-events.ts';
import { withStatements, type Statement } from '../storage/sqlite-statements.ts';
import { LEDGER_COLUMNS, MysqlAppender, type Chained } from './mysql-appender.ts';

export type { Chained };
import type { ChainHead, StoredEntry } from './entry.ts';
import type { LedgerFilter, Checkpoint } from './ledger.model.ts';

const COLUMNS = LEDGER_COLUMNS;
const SQL = {
  head: 'select seq, hash from ledger_head where id = 1',
  insert: `insert into ledger_events (${COLUMNS.join(', ')}) values (${COLUMNS.map(() => '?').join(', ')})`,
  setHead: 'update ledger_head set seq = ?, hash = ? where id = 1',
  page: `select ${COLUMNS.join(', ')} from ledger_events where seq > ? order by seq limit ?`,
};
const INSERT_CHUNK = 200;

function asHead(row: unknown): ChainHead {
  const r = row as ChainHead | undefined;
  if (r === undefined) throw new Error('ledger_head row is missing');
  return { seq: Number(r.seq), hash: r.hash };
}

function insertRows(sql: (text: string) => Statement, rows: StoredEntry[], head: ChainHead): void {
  const insert = sql(SQL.insert);
  for (const r of rows) insert.run(...COLUMNS.map((c) => r[c]));
  sql(SQL.setHead).run(head.seq, head.hash);
}

/** The condition of SQLite's partial index `ledger_events_human`, exactly as the migration wrote it. */
const HUMAN_EVENTS = "type like 'human.%'";

/** LIKE pattern that matches `text` literally (`!` is the escape character). */
function literal(text: string): string {
  return text.replace(/[!%_]/g, (c) => `!${c}`);
}

/** The only code that touches ledger_events, ledger_head and ledger_checkpoints. */
export class LedgerRepo {
  readonly #db: Db;
  /** SQLite's hot paths run on cached prepared statements (see storage/sqlite-statements.ts). */
  readonly #sqlite: boolean;
  readonly #mysql: MysqlAppender | null;

  constructor(db: Db) {
    this.#db = db;
    this.#sqlite = dialect(db) === 'sqlite';
    this.#mysql = this.#sqlite ? null : new MysqlAppender(db);
  }

  /** Closes what the repo opened beside the Knex pool (MySQL's appender connection). */
  async close(): Promise<void> {
    await this.#mysql?.close();
  }

  /** Reads the head inside `trx`, locking it on MySQL so appends from every process queue here. */
  async lockHead(trx: Trx): Promise<ChainHead> {
    const row = (
      this.#sqlite
        ? await withStatements(trx, ({ sql }) => sql(SQL.head).get())
        : await trx('ledger_head').select('seq', 'hash').where({ id: 1 }).forUpdate().first()
    ) as ChainHead | undefined;
    if (row === undefined) throw new Error('ledger_head row is missing');
    return { seq: Number(row.seq), hash: row.hash };
  }

  async insert(trx: Trx, rows: StoredEntry[], head: ChainHead): Promise<void> {
    if (this.#sqlite) {
      await withStatements(trx, ({ sql }) => insertRows(sql, rows, head));
      return;
    }
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) await trx('ledger_events').insert(rows.slice(i, i + INSERT_CHUNK));
    await trx('ledger_head').where({ id: 1 }).update({ seq: head.seq, hash: head.hash });
  }

  /**
   * Appends the rows `build` makes on the current head, in a transaction of their own. On SQLite
   * this is one synchronous transaction on the raw connection (no Knex transaction per commit);
   * the pool's single connection still serialises it with every Knex transaction. On MySQL it
   * goes through the appender's connection in two round trips (mysql-appender.ts).
   */
  async appendAlone(build: (head: ChainHead) => Chained): Promise<Chained> {
    if (this.#sqlite) {
      return withStatements(this.#db, ({ sql, atomically }) =>
        atomically(() => {
          const chained = build(asHead(sql(SQL.head).get()));
          insertRows(sql, chained.rows, chained.head);
          return chained;
        }),
      );
    }
    return this.#mysql!.append(build);
  }

  /**
   * Appends the rows `build` makes on the head, locked, inside the caller's transaction; `locked`
   * is the head this transaction already locked (`lockHead`), if it did: nothing can have moved it.
   */
  async appendIn(trx: Trx, build: (head: ChainHead) => Chained, locked: ChainHead | null = null): Promise<Chained> {
    const chained = build(locked ?? (await this.lockHead(trx)));
    await this.insert(trx, chained.rows, chained.head);
    return chained;
  }

  async head(): Promise<ChainHead> {
    const row = (
      this.#sqlite
        ? await withStatements(this.#db, ({ sql }) => sql(SQL.head).get())
        : await this.#db('ledger_head').select('seq', 'hash').where({ id: 1 }).first()
    ) as ChainHead | undefined;
    return row === undefined ? { seq: 0, hash: '0'.repeat(64) } : { seq: Number(row.seq), hash: row.hash };
  }

  /** One page of the filtered log plus whether more rows lie beyond it in the same direction. */
  async find(f: LedgerFilter): Promise<{ rows: StoredEntry[]; more: boolean }> {
    const q = this.#db('ledger_events').select(...COLUMNS);
    if (f.type !== undefined) {
      q.whereRaw("type like ? escape '!'", [`${literal(f.type)}%`]);
      // SQLite's partial index of human.* events (migration 202611241600) serves this read only
      // when the query repeats its condition word for word.
      if (this.#sqlite && f.type.startsWith('human.')) q.whereRaw(HUMAN_EVENTS);
    }
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

  /**
   * Hands the rows with seq > afterSeq to `each`, in order, at most `size` of them, and says how
   * many there were: verify streams the chain with this. On SQLite the rows come one at a time
   * from the statement, so none outlives its turn (verify stays in constant memory).
   */
  async eachAfter(afterSeq: number, size: number, each: (row: StoredEntry) => boolean): Promise<number> {
    if (this.#sqlite) {
      return withStatements(this.#db, ({ sql }) => {
        let n = 0;
        for (const row of sql(SQL.page).iterate(afterSeq, size)) {
          n++;
          if (!each(row as StoredEntry)) break;
        }
        return n;
      });
    }
    const rows = (await this.#db('ledger_events')
      .select(...COLUMNS)
      .where('seq', '>', afterSeq)
      .orderBy('seq', 'asc')
      .limit(size)) as StoredEntry[];
    let n = 0;
    for (const row of rows) {
      n++;
      if (!each(row)) break;
    }
    return n;
  }

  /**
   * The first seq whose `at` is at or after `at` (head.seq + 1 when none is): a binary search
   * on the primary key, about 25 point reads on a chain of ten million. Entries are appended
   * under the head lock with the service clock, so `at` grows with seq.
   */
  async firstSeqAt(at: string): Promise<number> {
    let lo = 1;
    let hi = (await this.head()).seq + 1;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const row = (await this.#db('ledger_events').select('at').where({ seq: mid }).first()) as { at: string } | undefined;
      if (row !== undefined && row.at < at) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** How many entries of each of `types` lie in seqs [fromSeq, toSeq). */
  async countTypes(fromSeq: number, toSeq: number, types: readonly string[], own = false): Promise<Map<string, number>> {
    const q = this.#db('ledger_events')
      .select('type')
      .count({ n: '*' })
      .where('seq', '>=', fromSeq)
      .andWhere('seq', '<', toSeq)
      .whereIn('type', [...types]);
    if (own) ownOnly(q);
    const rows = (await q.groupBy('type')) as Array<{ type: string; n: number | string }>;
    return new Map(rows.map((r) => [r.type, Number(r.n)]));
  }

  /** The newest `limit` entries of `types` in seqs [fromSeq, toSeq), oldest first. */
  async ofTypes(fromSeq: number, toSeq: number, types: readonly string[], limit: number, own = false): Promise<StoredEntry[]> {
    const q = this.#db('ledger_events')
      .select(...COLUMNS)
      .where('seq', '>=', fromSeq)
      .andWhere('seq', '<', toSeq)
      .whereIn('type', [...types]);
    if (own) ownOnly(q);
    const rows = (await q.orderBy('seq', 'desc').limit(limit)) as StoredEntry[];
    return rows.reverse();
  }

  /** The stored hash of the entry at `seq`, or null when there is none. */
  async hashAt(seq: number): Promise<string | null> {
    const row = (await this.#db('ledger_events').select('hash').where({ seq }).first()) as { hash: string } | undefined;
    return row?.hash ?? null;
  }

  async saveCheckpoint(cp: Checkpoint): Promise<void> {
    await this.#db('ledger_checkpoints').insert(cp).onConflict('seq').ignore();
  }

  async checkpoints(): Promise<Checkpoint[]> {
    const rows = (await this.#db('ledger_checkpoints').select('seq', 'hash', 'at', 'signature').orderBy('seq', 'asc')) as Checkpoint[];
    return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
  }

  async lastCheckpoint(): Promise<Checkpoint | null> {
    const row = (await this.#db('ledger_checkpoints').select('seq', 'hash', 'at', 'signature').orderBy('seq', 'desc').first()) as Checkpoint | undefined;
    return row === undefined ? null : { ...row, seq: Number(row.seq) };
  }
}

/**
 * Only the service's own entries: not those a caller recorded (POST /v1/events), which carry
 * `data.recorded_by` (host/ledger/caller-events.ts). JSON_EXTRACT on MySQL/MariaDB, json_extract
 * on SQLite: the top-level key only, never a nested one.
 */
function ownOnly(q: Knex.QueryBuilder): void {
  void q.whereRaw(`json_extract(data, '$.${RECORDED_BY}') is null`);
}
