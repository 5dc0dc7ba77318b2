import { randomBytes } from 'node:crypto';
import { openDb } from '../host/storage/db.ts';
import { migrate, pendingMigrations } from '../host/storage/migrate.ts';
import { MARIADB_URL, mariadbTest, withServer } from './helpers/db.ts';

/**
 * Hosts that start together on an empty MySQL database race to create Knex's migration
 * bookkeeping; that race once left the lock table with two rows and every later start locked
 * out. Always runs on MariaDB (SQLite has one process per file).
 */
const SERVER_URL = MARIADB_URL;

await mariadbTest('hosts migrating one fresh MySQL database at the same moment all start, and the next start finds nothing to do', async (t) => {
  for (let round = 0; round < 5; round++) {
    const name = `t_${randomBytes(6).toString('hex')}`;
    await withServer(SERVER_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4`));
    const url = new URL(SERVER_URL);
    url.pathname = `/${name}`;
    const dbs = Array.from({ length: 4 }, () => openDb({ databaseUrl: url.toString(), dataDir: '/nonexistent' }));
    try {
      await Promise.all(dbs.map((db) => migrate(db)));
      t.is(Number((await dbs[0]!('knex_migrations_lock').count({ n: '*' }).first())?.n), 1, `round ${round}: one lock row`);
      t.is(await pendingMigrations(dbs[0]!), 0);
      await migrate(dbs[1]!);
    } finally {
      await Promise.all(dbs.map((db) => db.destroy()));
      await withServer(SERVER_URL, (db) => db.raw(`drop database \`${name}\``));
    }
  }
});
