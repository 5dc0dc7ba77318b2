import { randomBytes } from 'node:crypto';
import knex from 'knex';
import { openDb } from '../../host/storage/db.ts';
import { migrate, migrationLock, pendingMigrations } from '../../host/storage/migrate.ts';
import { MARIADB_URL, mariadbMissing, withServer } from '../helpers/db.ts';
import { testNeeding } from '../helpers/needs.ts';

/**
 * Hosts that start together on an empty MySQL database race to create Knex's migration
 * bookkeeping; that race once left the lock table with two rows and every later start locked
 * out. Always runs on MariaDB (SQLite has one process per file).
 */
const SERVER_URL = MARIADB_URL;
const missing = await mariadbMissing();

testNeeding(missing, 'hosts migrating one fresh MySQL database at the same moment all start, and the next start finds nothing to do', async (t) => {
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

testNeeding(missing, 'a migration on one database does not wait for another database’s migration lock on the same server', async (t) => {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withServer(SERVER_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4`));
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  // Another install's migration in progress: its database's lock held on one connection.
  const other = knex({ client: 'mysql2', connection: SERVER_URL, pool: { min: 1, max: 1 } });
  const db = openDb({ databaseUrl: url.toString(), dataDir: '/nonexistent' });
  try {
    t.not(migrationLock(name), migrationLock('another_install'));
    t.true(migrationLock('x'.repeat(64)).length <= 64);
    const [held] = (await other.raw('select get_lock(?, 0) as got', [migrationLock('another_install')])) as [Array<{ got: number }>];
    t.is(held[0]!.got, 1);
    // A server-wide lock name would make this wait 120 s and fail; the test's timeout is far shorter.
    t.timeout(60_000);
    await migrate(db);
    t.is(await pendingMigrations(db), 0);
  } finally {
    await other.destroy();
    await db.destroy();
    await withServer(SERVER_URL, (d) => d.raw(`drop database \`${name}\``));
  }
});
