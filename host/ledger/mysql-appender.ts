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

  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
    this.#options = { ...(db.client.config.connection as mysql.ConnectionOptions), multipleStatements: true };
  }

  /** A statement with the service's statement timeout (storage/db.ts `limitStatements`), if one is set. */
  #statement(sql: string): mysql.QueryOptions {
    const timeout = (this.#db.client.config as { statementTimeoutMs?: number }).statementTimeoutMs;
    return timeout === undefined ? { sql } : { sql, timeout };
  }

  async append(build: (head: ChainHead) => Chained): Promise<Chained> {
    let conn = await this.#open();
    let results: [unknown, Array<{ seq: number | string; hash: string }>];
    try {
      [results] = (await conn.query(this.#statement(BEGIN_AND_LOCK))) as unknown as [typeof results];
    } catch (e) {
      // The connection died while idle (server restart, idle timeout). Nothing was sent that
      // could have committed, so one retry on a new connection is safe. A statement that timed
      // out (a frozen database) is not tried again: the caller is answered now.
      if (!(e as { fatal?: boolean }).fatal) throw e;
      await this.#drop();
      if ((e as { code?: unknown }).code === 'PROTOCOL_SEQUENCE_TIMEOUT') throw e;
      conn = await this.#open();
      [results] = (await conn.query(this.#statement(BEGIN_AND_LOCK))) as unknown as [typeof results];
    }
    try {
      const row = results[1][0];
      if (row === undefined) throw new Error('ledger_head row is missing');
      const chained = build({ seq: Number(row.seq), hash: row.hash });
      const values = chained.rows.map((r) => LEDGER_COLUMNS.map((c) => r[c]));
      await conn.query(
        this.#statement(`insert into ledger_events (${LEDGER_COLUMNS.join(', ')}) values ?; update ledger_head set seq = ?, hash = ? where id = 1; commit`),
        [values, chained.head.seq, chained.head.hash],
      );
      return chained;
    } catch (e) {
      if ((e as { fatal?: boolean }).fatal) await this.#drop();
      else await conn.query(this.#statement('rollback')).catch(() => this.close());
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

  /** Forgets a connection that failed (timed out, lost) without waiting on it. */
  async #drop(): Promise<void> {
    const conn = this.#conn;
    this.#conn = null;
    if (conn !== null) await conn.then((c) => c.destroy()).catch(() => {});
  }
}
