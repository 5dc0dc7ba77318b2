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
  /** The prepared statement for `text` (the connection's cached one: see `openDb`). */
  sql(text: string): Statement;
  /** Runs `fn` in a transaction of the raw connection (better-sqlite3's BEGIN/COMMIT, cached). */
  atomically<T>(fn: () => T): T;
}

/**
 * Runs `fn` on the raw better-sqlite3 connection behind `q` (a Knex instance or transaction),
 * without Knex's query building and promise per statement: the ledger's hot paths (append,
 * verify) and sign-in's reads use this. Statements come from the connection's own cache of
 * prepared statements (`openDb`). Inside a transaction Knex hands out the transaction's own
 * connection, so statements join it.
 */
export async function withStatements<T>(q: Knex, fn: (scope: StatementScope) => T): Promise<T> {
  const client = q.client as { acquireConnection(): Promise<RawSqlite>; releaseConnection(c: RawSqlite): Promise<unknown> };
  const conn = await client.acquireConnection();
  try {
    return fn({
      sql: (text) => conn.prepare(text),
      atomically: (body) => conn.transaction(body)() as ReturnType<typeof body>,
    });
  } finally {
    await client.releaseConnection(conn);
  }
}
