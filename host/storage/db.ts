import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import type { Config } from '../config.ts';

export type Db = Knex;
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

/**
 * Opens the database the configuration names: MySQL/MariaDB through mysql2 when
 * SERVICE_DATABASE_URL is set, else the embedded SQLite file `service.db` in the data directory
 * (WAL, synchronous=NORMAL: a commit survives the process being killed; see docs/storage.md).
 */
export function openDb(config: Pick<Config, 'databaseUrl' | 'dataDir'>, opts: { warn?: (message: string) => void } = {}): Db {
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
      },
      pool: { min: 0, max: 10 },
      acquireConnectionTimeout: 10_000,
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
      afterCreate: (conn: { pragma(s: string): unknown }, done: (err: Error | null, conn: unknown) => void) => {
        conn.pragma('journal_mode = WAL');
        conn.pragma('synchronous = NORMAL');
        conn.pragma('busy_timeout = 5000');
        conn.pragma('foreign_keys = ON');
        done(null, conn);
      },
    },
  });
}
