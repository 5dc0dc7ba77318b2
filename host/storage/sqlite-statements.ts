import type { Knex } from 'knex';

/** The parts of a better-sqlite3 statement and database the hot paths use. */
export interface Statement {
  run(...params: unknown[]): unknown;
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
}
interface RawSqlite {
  prepare(sql: string): Statement;
  transaction<F extends () => unknown>(fn: F): F;
}

export interface StatementScope {
  /** The cached prepared statement for `text`. */
  sql(text: string): Statement;
  /** Runs `fn` in a transaction of the raw connection (better-sqlite3's BEGIN/COMMIT, cached). */
  atomically<T>(fn: () => T): T;
}

const cache = new WeakMap<RawSqlite, Map<string, Statement>>();

/**
 * Runs `fn` on the raw better-sqlite3 connection behind `q` (a Knex instance or transaction)
 * with prepared statements cached per connection. Knex prepares a new statement for every
 * query on SQLite, which costs as much as running it and holds native memory until the garbage
 * collector finalises it; the ledger's hot paths (append, verify) use this instead. Inside a
 * transaction Knex hands out the transaction's own connection, so statements join it.
 */
export async function withStatements<T>(q: Knex, fn: (scope: StatementScope) => T): Promise<T> {
  const client = q.client as { acquireConnection(): Promise<RawSqlite>; releaseConnection(c: RawSqlite): Promise<unknown> };
  const conn = await client.acquireConnection();
  try {
    let stmts = cache.get(conn);
    if (stmts === undefined) cache.set(conn, (stmts = new Map()));
    const own = stmts;
    return fn({
      sql: (text) => {
        let s = own.get(text);
        if (s === undefined) own.set(text, (s = conn.prepare(text)));
        return s;
      },
      atomically: (body) => conn.transaction(body)() as ReturnType<typeof body>,
    });
  } finally {
    await client.releaseConnection(conn);
  }
}
