import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import type { Knex } from 'knex';
import { MODULE_EXT } from '../compiled.ts';
import { dialect, type Db } from './db.ts';

const DIR = new URL('./migrations/', import.meta.url);
/**
 * The named lock of one database's migrations. MySQL's named locks are server-wide, so the name
 * carries the database's: installs (and test suites) on other databases of the same server do
 * not wait for each other. A name too long for MySQL's 64 characters is hashed.
 */
export function migrationLock(database: string): string {
  const name = `oncall:migrate:${database}`;
  return name.length <= 64 ? name : `oncall:migrate:${createHash('sha256').update(database).digest('hex').slice(0, 40)}`;
}

interface Migration {
  up(db: Knex): Promise<void>;
  down?(db: Knex): Promise<void>;
}

/**
 * Migrations are the files `YYYYMMDDHHmm_<verb>_<object>.ts` in ./migrations, in name order. The
 * release package ships them compiled (`.js`, host/compiled.ts) under the same names, which the
 * database records: a database migrated from a checkout and one migrated by the package agree.
 */
class FolderSource implements Knex.MigrationSource<string> {
  async getMigrations(): Promise<string[]> {
    return readdirSync(DIR)
      .filter((f) => f.endsWith(MODULE_EXT) && /^\d{12}_[a-z0-9_]+$/.test(f.slice(0, -MODULE_EXT.length)))
      .map((f) => `${f.slice(0, -MODULE_EXT.length)}.ts`)
      .sort();
  }
  getMigrationName(name: string): string {
    return name;
  }
  async getMigration(name: string): Promise<Knex.Migration> {
    const m = (await import(new URL(name.replace(/\.ts$/, MODULE_EXT), DIR).href)) as Migration;
    return { up: m.up, down: m.down ?? (async () => {}) };
  }
}

const options = (): Knex.MigratorConfig => ({ migrationSource: new FolderSource(), tableName: 'knex_migrations' });

/** Where the database's schema stands against this version's migrations. */
export interface SchemaState {
  /** The migrations the database has had, in name order. */
  applied: string[];
  /** This version's migrations the database has not had yet. */
  pending: string[];
  /** Migrations the database has had that this version does not know: a newer version ran them. */
  unknown: string[];
}

/**
 * The database was migrated by a newer version: this one would run on a schema it does not
 * know. Refused before anything is read or written (docs/install.md, upgrades and rollbacks).
 */
export class SchemaNewerError extends Error {
  readonly unknown: string[];

  constructor(unknown: string[]) {
    super(
      `the database was migrated by a newer version of oncall (${unknown.length} migration${unknown.length === 1 ? '' : 's'} this version does not know, ` +
        `the newest ${unknown[unknown.length - 1]}): run that version again, or restore the backup taken before the upgrade (docs/install.md)`,
    );
    this.unknown = unknown;
  }
}

/** This version's migrations, in name order. */
export function knownMigrations(): Promise<string[]> {
  return new FolderSource().getMigrations();
}

/** Reads the migrations the database has had (none on an empty database) and compares them with this version's. */
export async function schemaState(db: Db): Promise<SchemaState> {
  const known = await new FolderSource().getMigrations();
  const done = (await db.schema.hasTable('knex_migrations'))
    ? ((await db('knex_migrations').select('name')) as Array<{ name: string }>).map((r) => r.name)
    : [];
  const had = new Set(done);
  const mine = new Set(known);
  return { applied: [...done].sort(), pending: known.filter((n) => !had.has(n)), unknown: done.filter((n) => !mine.has(n)).sort() };
}

async function refuseNewer(db: Db): Promise<void> {
  const { unknown } = await schemaState(db);
  if (unknown.length > 0) throw new SchemaNewerError(unknown);
}

/**
 * Brings the schema up to date. On MySQL, hosts starting together take a server-side named lock
 * first: Knex's own lock table is created and seeded with a check-then-act, so simultaneous
 * first starts can leave it with two rows and every later start "already locked" for good.
 * SQLite has one process per file, so Knex's lock is enough there. A database migrated by a
 * newer version (migrations this one does not know) is refused with SchemaNewerError, untouched.
 */
export async function migrate(db: Db): Promise<void> {
  if (dialect(db) === 'sqlite') {
    await refuseNewer(db);
    await db.migrate.latest(options());
    return;
  }
  const client = db.client as { acquireConnection(): Promise<unknown>; releaseConnection(c: unknown): Promise<unknown> };
  const conn = await client.acquireConnection();
  try {
    const [current] = (await db.raw('select database() as name').connection(conn)) as [Array<{ name: string | null }>];
    const lock = migrationLock(current[0]?.name ?? '');
    const [rows] = (await db.raw('select get_lock(?, ?) as got', [lock, 120]).connection(conn)) as [Array<{ got: number | null }>];
    if (rows[0]?.got !== 1) throw new Error(`could not take the migration lock ${lock} within 120 s`);
    try {
      await refuseNewer(db);
      await db.migrate.latest(options());
    } finally {
      await db.raw('select release_lock(?)', [lock]).connection(conn);
    }
  } finally {
    await client.releaseConnection(conn);
  }
}

/** How many migrations have not run yet (0 = current); SchemaNewerError when a newer version migrated the database. */
export async function pendingMigrations(db: Db): Promise<number> {
  const { pending, unknown } = await schemaState(db);
  if (unknown.length > 0) throw new SchemaNewerError(unknown);
  return pending.length;
}
