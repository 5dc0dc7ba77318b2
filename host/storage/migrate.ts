import { readdirSync } from 'node:fs';
import type { Knex } from 'knex';
import type { Db } from './db.ts';

const DIR = new URL('./migrations/', import.meta.url);

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

/** Brings the schema up to date; several hosts starting at once are serialised by Knex's lock. */
export async function migrate(db: Db): Promise<void> {
  await db.migrate.latest(options());
}

/** How many migrations have not run yet (0 = current). */
export async function pendingMigrations(db: Db): Promise<number> {
  const [, pending] = (await db.migrate.list(options())) as [unknown[], unknown[]];
  return pending.length;
}
