import { readdirSync } from 'node:fs';
import type { Knex } from 'knex';
import { dialect, type Db } from './db.ts';

const DIR = new URL('./migrations/', import.meta.url);
const MIGRATION_LOCK = 'oncall:migrate';

interface Migration {
  up(db: Knex): Promise<void>;
  down?(db: Knex): Promise<void>;
}

/** Migrations are the files `YYYYMMDDHHmm_<verb>_<object>.ts` in ./migrations, in name order. */
class FolderSource implements Knex.MigrationSource<string> {
  async getMigrations(): Promise<string[]> {
    return readdirSync(DIR)
      .filter((f) => /^\d{12}_[a-z0-9_]+\.ts$/.test(f))
      .sort();
  }
  getMigrationName(name: string): string {
    return name;
  }
  async getMigration(name: string): Promise<Knex.Migration> {
    const m = (await import(new URL(name, DIR).href)) as Migration;
    return { up: m.up, down: m.down ?? (async () => {}) };
  }
}

const options = (): Knex.MigratorConfig => ({ migrationSource: new FolderSource(), tableName: 'knex_migrations' });

/**
 * Brings the schema up to date. On MySQL, hosts starting together take a server-side named lock
 * first: Knex's own lock table is created and seeded with a check-then-act, so simultaneous
 * first starts can leave it with two rows and every later start "already locked" for good.
 * SQLite has one process per file, so Knex's lock is enough there.
 */
export async function migrate(db: Db): Promise<void> {
  if (dialect(db) === 'sqlite') {
    await db.migrate.latest(options());
    return;
  }
  const client = db.client as { acquireConnection(): Promise<unknown>; releaseConnection(c: unknown): Promise<unknown> };
  const conn = await client.acquireConnection();
  try {
    const [rows] = (await db.raw('select get_lock(?, ?) as got', [MIGRATION_LOCK, 120]).connection(conn)) as [Array<{ got: number | null }>];
    if (rows[0]?.got !== 1) throw new Error(`could not take the migration lock ${MIGRATION_LOCK} within 120 s`);
    try {
      await db.migrate.latest(options());
    } finally {
      await db.raw('select release_lock(?)', [MIGRATION_LOCK]).connection(conn);
    }
  } finally {
    await client.releaseConnection(conn);
  }
}

/** How many migrations have not run yet (0 = current). */
export async function pendingMigrations(db: Db): Promise<number> {
  const [, pending] = (await db.migrate.list(options())) as [unknown[], unknown[]];
  return pending.length;
}
