import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { testNeeding } from './needs.ts';
import knex from 'knex';

/**
 * Where a test's database lives. `npm test` runs on SQLite; with TEST_DATABASE_URL set to a
 * MySQL/MariaDB server (`mysql://root@127.0.0.1:3306`), each test gets a throwaway database of
 * its own on that server, dropped afterwards.
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL?.trim() || null;
export const ENGINE: 'mysql' | 'sqlite' = TEST_DATABASE_URL === null ? 'sqlite' : 'mysql';

export interface TestStore {
  dataDir: string;
  databaseUrl: string | null;
  cleanup(): Promise<void>;
}

export async function createTestStore(): Promise<TestStore> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oncall-test-'));
  if (TEST_DATABASE_URL === null) {
    return { dataDir, databaseUrl: null, cleanup: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withServer(TEST_DATABASE_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    dataDir,
    databaseUrl: url.toString(),
    cleanup: async () => {
      await withServer(TEST_DATABASE_URL, (db) => db.raw(`drop database if exists \`${name}\``));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs `fn` on a connection to the server itself (no database selected). */
export async function withServer<T>(serverUrl: string, fn: (db: knex.Knex) => Promise<T>): Promise<T> {
  const url = new URL(serverUrl);
  const db = knex({
    client: 'mysql2',
    connection: { host: url.hostname, port: Number(url.port || 3306), user: decodeURIComponent(url.username), password: decodeURIComponent(url.password) },
    pool: { min: 0, max: 1 },
  });
  try {
    return await fn(db);
  } finally {
    await db.destroy();
  }
}

/** The MariaDB server for tests that always need one, even in the SQLite pass (several processes). */
export const MARIADB_URL = TEST_DATABASE_URL ?? 'mysql://root@127.0.0.1:3306';

/** Null when the MariaDB server answers, else why not: for a file declaring several tests that need it (testNeeding each). */
export function mariadbMissing(): Promise<string | null> {
  return withServer(MARIADB_URL, (db) => db.raw('select 1')).then(
    () => null,
    (e: Error) => `MariaDB at ${new URL(MARIADB_URL).host} not reachable: ${e.message}`,
  );
}

/**
 * Declares a test that needs MariaDB whatever the pass. When no server answers it is skipped
 * with the reason in its title, and under CI=true it fails instead: CI must run it. (A file with
 * several such tests asks `mariadbMissing()` once and declares them with `testNeeding`: ava
 * wants every test declared before its first tick.)
 */
export async function mariadbTest(title: string, fn: (t: ExecutionContext) => Promise<void>): Promise<void> {
  testNeeding(await mariadbMissing(), title, fn);
}

/** Every row of every table, hashed: equal before and after means nothing was written. */
export async function everyRow(db: knex.Knex): Promise<string> {
  const tables: string[] =
    ENGINE === 'sqlite'
      ? ((await db.raw("select name from sqlite_master where type = 'table' order by name")) as Array<{ name: string }>).map((r) => r.name)
      : ((await db.raw('show tables'))[0] as Array<Record<string, string>>).map((r) => Object.values(r)[0]!).sort();
  const hash = createHash('sha256');
  for (const table of tables) {
    const rows = ((await db(table).select()) as unknown[]).map((r) => JSON.stringify(r, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString('hex') : v)));
    hash.update(`${table}:${rows.sort().join('\n')}\n`);
  }
  return hash.digest('hex');
}
