import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import type { Config } from '../config.ts';

export type Db = Knex;

/** MySQL/MariaDB: connecting, and waiting for a pooled connection, fail after this unless told otherwise. */
export const DEFAULT_DB_TIMEOUT_MS = 10_000;

interface TimedClient {
  config: { statementTimeoutMs?: number };
  _query(connection: unknown, obj: unknown): Promise<unknown>;
}

/**
 * Knex has no setting for a timeout on every statement; mysql2 has one per query (`timeout`: the
 * query fails with PROTOCOL_SEQUENCE_TIMEOUT, and its connection is destroyed here). The mysql2
 * client's `_query` (used by the pool and by transactions alike) is wrapped once to pass the
 * knex instance's `statementTimeoutMs`, when one was set with `limitStatements`.
 */
let wrapped = false;
function wrapMysqlQueries(client: TimedClient): void {
  if (wrapped) return;
  wrapped = true;
  const proto = Object.getPrototypeOf(client) as TimedClient;
  const query = proto._query;
  proto._query = function (this: TimedClient, connection: unknown, obj: unknown) {
    const ms = this.config.statementTimeoutMs;
    if (ms !== undefined && typeof obj === 'object' && obj !== null) {
      const o = obj as { options?: Record<string, unknown> };
      if (o.options?.timeout === undefined) o.options = { ...o.options, timeout: ms };
    }
    return query.call(this, connection, obj).catch((err: unknown) => {
      // mysql2 leaves the connection as it was: destroyed here, so the pool never hands it out again.
      if ((err as { code?: unknown }).code === 'PROTOCOL_SEQUENCE_TIMEOUT') (connection as { destroy(): void }).destroy();
      throw err;
    });
  };
}

/**
 * MySQL/MariaDB: every statement from now on fails after `ms` (the service sets it once the
 * migrations are done, so a long migration is not cut off). SQLite: nothing (its busy timeout applies).
 */
export function limitStatements(db: Knex, ms: number): void {
  if (dialect(db) !== 'mysql') return;
  wrapMysqlQueries(db.client as unknown as TimedClient);
  (db.client.config as { statementTimeoutMs?: number }).statementTimeoutMs = ms;
}
export type Trx = Knex.Transaction;

/** Which engine a Knex instance talks to; the few engine-specific statements branch on it. */
export function dialect(db: Knex): 'mysql' | 'sqlite' {
  return db.client.config.client === 'mysql2' ? 'mysql' : 'sqlite';
}

/**
 * Creates the SQLite file readable by its owner only (0600) before SQLite opens it: SQLite gives
 * its write-ahead log and shared-memory files the database file's mode. An existing file (and its
 * -wal, -shm) that others may read is narrowed to 0600 where we own it.
 */
function ownerOnly(file: string): void {
  closeSync(openSync(file, 'a', 0o600));
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      if ((statSync(f).mode & 0o077) !== 0) chmodSync(f, 0o600);
    } catch {
      // Absent, or not ours to change (a CLI run by another user): left as it is.
    }
  }
}

interface SqliteStatement {
  readonly busy: boolean;
}
interface SqliteConnection {
  pragma(s: string): unknown;
  prepare(sql: string): SqliteStatement;
}

/** How many prepared statements one SQLite connection keeps (least recently used go first). */
export const PREPARED_CACHE_SIZE = 500;

/**
 * Knex's better-sqlite3 client prepares every query anew (`connection.prepare(sql)` on each
 * call): compiling the statement costs about as much as running it, and the discarded statement
 * holds native memory until the garbage collector finalises it. The connection's `prepare` is
 * wrapped here to hand back the statement prepared before for the same text (Knex only ever runs
 * it to completion with `all` or `run`, binding its values each time), keeping the last
 * PREPARED_CACHE_SIZE texts. A statement still being iterated (`busy`) is never handed out twice:
 * a fresh one is prepared for that call. SQLite re-prepares a cached statement itself after a
 * schema change (the migrations).
 */
function cachePrepared(conn: SqliteConnection): void {
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, SqliteStatement>();
  conn.prepare = (sql: string) => {
    const cached = cache.get(sql);
    if (cached !== undefined) {
      if (cached.busy) return prepare(sql);
      cache.delete(sql); // re-inserted: most recently used last
      cache.set(sql, cached);
      return cached;
    }
    const fresh = prepare(sql);
    cache.set(sql, fresh);
    if (cache.size > PREPARED_CACHE_SIZE) cache.delete(cache.keys().next().value!);
    return fresh;
  };
}

/**
 * Opens the database the configuration names: MySQL/MariaDB through mysql2 when
 * SERVICE_DATABASE_URL is set, else the embedded SQLite file `service.db` in the data directory
 * (WAL, synchronous=NORMAL: a commit survives the process being killed; see docs/storage.md).
 */
export function openDb(config: Pick<Config, 'databaseUrl' | 'dataDir'>, opts: { warn?: (message: string) => void; timeoutMs?: number } = {}): Db {
  // Knex prints its own warnings with console.log unless given a sink; stdout carries JSON logs
  // (service) or --json output (CLI), so they go where the caller says, one line each.
  const sink = opts.warn ?? ((m: string) => process.stderr.write(`knex: ${m}\n`));
  const line = (m: unknown) => sink(String(m).split('\n')[0]!);
  const log = { warn: line, error: line, deprecate: line, debug: () => {} };
  if (config.databaseUrl !== null) {
    const url = new URL(config.databaseUrl.replace(/^mysql2:/, 'mysql:'));
    return knex({
      client: 'mysql2',
      connection: {
        host: url.hostname,
        port: url.port === '' ? 3306 : Number(url.port),
        user: decodeURIComponent(url.username),
        password: decodeURIComponent(url.password),
        database: url.pathname.replace(/^\//, ''),
        charset: 'utf8mb4',
        timezone: 'Z',
        supportBigNumbers: true,
        connectTimeout: opts.timeoutMs ?? DEFAULT_DB_TIMEOUT_MS,
      },
      pool: { min: 0, max: 10 },
      acquireConnectionTimeout: opts.timeoutMs ?? DEFAULT_DB_TIMEOUT_MS,
      log,
    });
  }
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  ownerOnly(path.join(config.dataDir, 'service.db'));
  return knex({
    client: 'better-sqlite3',
    connection: { filename: path.join(config.dataDir, 'service.db') },
    useNullAsDefault: true,
    log,
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: SqliteConnection, done: (err: Error | null, conn: unknown) => void) => {
        cachePrepared(conn);
        conn.pragma('journal_mode = WAL');
        conn.pragma('synchronous = NORMAL');
        conn.pragma('busy_timeout = 5000');
        conn.pragma('foreign_keys = ON');
        done(null, conn);
      },
    },
  });
}
