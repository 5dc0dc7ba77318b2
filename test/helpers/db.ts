import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { fileURLToPath } from 'node:url';
import { testNeeding } from './needs.ts';
import knex from 'knex';
import { openDb } from '../../host/storage/db.ts';
import { migrate } from '../../host/storage/migrate.ts';

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

/**
 * A throwaway store. On MySQL, `migrated: true` (what `startApp` asks for) gives a database
 * already at the latest schema, copied from the suite's template (below) instead of migrated
 * table by table: the service's own start finds nothing to migrate, exactly as after a
 * migration. Without it the database is empty, for the tests of migrating itself.
 */
export async function createTestStore(opts: { migrated?: boolean } = {}): Promise<TestStore> {
  refuseIfEngineIndependent();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oncall-test-'));
  if (TEST_DATABASE_URL === null) {
    return { dataDir, databaseUrl: null, cleanup: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = `t_${randomBytes(6).toString('hex')}`;
  if (opts.migrated === true) await createMigrated(TEST_DATABASE_URL, name);
  else await withServer(TEST_DATABASE_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
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

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** test/engine-independent.json: files the MariaDB pass leaves out (ava.config.js). */
const ENGINE_INDEPENDENT = new Set((JSON.parse(readFileSync(path.join(ROOT, 'test/engine-independent.json'), 'utf8')) as { files: string[] }).files);

/**
 * A store of the pass's engine is exactly what a file listed as engine-independent must not use:
 * the MariaDB pass leaves such a file out, so its tests would never run on MariaDB.
 */
export function refuseIfEngineIndependent(file = path.relative(ROOT, fileURLToPath(test.meta.file)).split(path.sep).join('/')): void {
  if (ENGINE_INDEPENDENT.has(file))
    throw new Error(
      `${file} opens a test store of the pass's engine, but test/engine-independent.json lists it (the MariaDB pass leaves it out): take it off the list`,
    );
}

interface Template {
  name: string;
  tables: string[];
  /** The tables the migrations left rows in (the chain head, the migrations' own, …). */
  seeded: string[];
}

let template: Promise<Template> | null = null;

/** Runs the service's migrations on the (existing) database `name` of the server. */
export async function migrateDatabase(serverUrl: string, name: string): Promise<void> {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = openDb({ databaseUrl: url.toString(), dataDir: '' }, { warn: () => {} });
  try {
    await migrate(db);
  } finally {
    await db.destroy();
  }
}

/** Creates database `name` on the server at the latest schema, copied from the template. */
export async function createMigrated(serverUrl: string, name: string): Promise<void> {
  const { name: from, tables, seeded } = await schemaTemplate(serverUrl);
  // One round trip for the whole copy (about 60 statements): sent one by one through the driver
  // they took 0.5-1.1 s on a loaded machine, where the server itself needs about 0.2 s.
  const statements = [
    `create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`,
    ...tables.map((table) => `create table \`${name}\`.\`${table}\` like \`${from}\`.\`${table}\``),
    ...seeded.map((table) => `insert into \`${name}\`.\`${table}\` select * from \`${from}\`.\`${table}\``),
  ];
  await withServer(serverUrl, (db) => db.raw(statements.join(';\n')));
}

/**
 * The schema the MySQL test stores are copied from: one database per set of migrations (its name
 * carries their hash), migrated once by whichever test process needs it first, under a server
 * lock, and kept between runs; a template of an older set is dropped when a new one is built.
 * Migrating a store took 2-3 s on this machine's MariaDB; copying the template's 55 tables takes
 * under one (no foreign keys, triggers or views to copy: `create table … like` is the whole
 * schema, checked by `test/operations/test-store-template.test.ts`).
 */
function schemaTemplate(serverUrl: string): Promise<Template> {
  return (template ??= buildTemplate(serverUrl).catch((e: unknown) => {
    template = null;
    throw e;
  }));
}

async function buildTemplate(serverUrl: string): Promise<Template> {
  const dir = path.join(import.meta.dirname, '../../host/storage/migrations');
  const hash = createHash('sha256');
  for (const file of readdirSync(dir).sort()) hash.update(`${file}\n${readFileSync(path.join(dir, file), 'utf8')}\n`);
  const name = `t_schema_${hash.digest('hex').slice(0, 16)}`;
  return withServer(serverUrl, async (db) => {
    const [got] = (await db.raw("select get_lock('oncall_test_schema', 300) as got")) as [Array<{ got: number | null }>];
    if (got[0]?.got !== 1) throw new Error('could not take the test schema lock within 300 s');
    try {
      const ready = (await db.raw('select 1 from information_schema.tables where table_schema = ? and table_name = ?', [name, 'schema_ready']))[0] as unknown[];
      if (ready.length === 0) {
        const [others] = (await db.raw("select schema_name as s from information_schema.schemata where schema_name like 't!_schema!_%' escape '!'")) as [
          Array<{ s: string }>,
        ];
        for (const { s } of others) await db.raw(`drop database \`${s}\``);
        await db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`);
        await migrateDatabase(serverUrl, name);
        // Marks the template whole: a build cut short is dropped and made again by the next run.
        await db.raw(`create table \`${name}\`.schema_ready (id int primary key)`);
      }
      const [rows] = (await db.raw(
        "select table_name as t from information_schema.tables where table_schema = ? and table_type = 'BASE TABLE' and table_name <> 'schema_ready' order by table_name",
        [name],
      )) as [Array<{ t: string }>];
      const tables = rows.map((r) => r.t);
      const seeded: string[] = [];
      for (const t of tables) if (((await db.raw(`select 1 from \`${name}\`.\`${t}\` limit 1`)) as [unknown[]])[0].length > 0) seeded.push(t);
      return { name, tables, seeded };
    } finally {
      await db.raw("select release_lock('oncall_test_schema')");
    }
  });
}

/** Runs `fn` on a connection to the server itself (no database selected). */
export async function withServer<T>(serverUrl: string, fn: (db: knex.Knex) => Promise<T>): Promise<T> {
  const url = new URL(serverUrl);
  const db = knex({
    client: 'mysql2',
    // Several statements in one query: only the helpers' own SQL goes through this connection.
    connection: {
      host: url.hostname,
      port: Number(url.port || 3306),
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
      multipleStatements: true,
    },
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
