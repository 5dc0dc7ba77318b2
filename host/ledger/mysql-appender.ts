import type mysql from 'mysql2/promise';
import type { Db } from '../storage/db.ts';
import type { ChainHead, StoredEntry } from './entry.ts';

/** Rows placed after a head, and the head they leave. */
export interface Chained {
  rows: StoredEntry[];
  head: ChainHead;
}

const BEGIN_AND_LOCK = 'start transaction; select seq, hash from ledger_head where id = 1 for update';

export const LEDGER_COLUMNS = ['seq', 'at', 'type', 'actor', 'reason', 'data', 'trace', 'prev_hash', 'hash'] as const;

/**
 * Standalone appends on MySQL, in two round trips per commit instead of five: a dedicated
 * connection with multiple statements on sends `START TRANSACTION; SELECT … FOR UPDATE` and then
 * `INSERT …; UPDATE ledger_head …; COMMIT`. The design is unchanged (one transaction that locks
 * the chain head); only the waiting is. Every value is bound by mysql2, never spliced in.
 * A connection that fails is dropped and the next commit opens a new one.
 */
export class MysqlAppender {
  readonly #options: mysql.ConnectionOptions;
  #conn: Promise<mysql.Connection> | null = null;

  constructor(db: Db) {
    this.#options = { ...(db.client.config.connection as mysql.ConnectionOptions), multipleStatements: true };
  }

  async append(build: (head: ChainHead) => Chained): Promise<Chained> {
    let conn = await this.#open();
    let results: [unknown, Array<{ seq: number | string; hash: string }>];
    try {
      [results] = (await conn.query(BEGIN_AND_LOCK)) as unknown as [typeof results];
    } catch (e) {
      // The connection died while idle (server restart, idle timeout). Nothing was sent that
      // could have committed, so one retry on a new connection is safe.
      if (!(e as { fatal?: boolean }).fatal) throw e;
      await this.close();
      conn = await this.#open();
      [results] = (await conn.query(BEGIN_AND_LOCK)) as unknown as [typeof results];
    }
    try {
      const row = results[1][0];
      if (row === undefined) throw new Error('ledger_head row is missing');
      const chained = build({ seq: Number(row.seq), hash: row.hash });
      const values = chained.rows.map((r) => LEDGER_COLUMNS.map((c) => r[c]));
      await conn.query(`insert into ledger_events (${LEDGER_COLUMNS.join(', ')}) values ?; update ledger_head set seq = ?, hash = ? where id = 1; commit`, [
        values,
        chained.head.seq,
        chained.head.hash,
      ]);
      return chained;
    } catch (e) {
      await conn.query('rollback').catch(() => this.close());
      throw e;
    }
  }

  #open(): Promise<mysql.Connection> {
    // mysql2 is loaded here, on MySQL only: an SQLite service never holds it (docs/performance.md, "Idle memory").
    const opening = (this.#conn ??= import('mysql2/promise').then((m) => m.default.createConnection(this.#options)));
    opening.catch(() => {
      if (this.#conn === opening) this.#conn = null;
    });
    return opening;
  }

  async close(): Promise<void> {
    const conn = this.#conn;
    this.#conn = null;
    if (conn !== null) await conn.then((c) => c.end()).catch(() => {});
  }
}
