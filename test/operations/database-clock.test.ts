import { randomBytes } from 'node:crypto';
import knex from 'knex';
import { TestClock } from '../../host/clock.ts';
import { silentLogger } from '../../host/log.ts';
import { LeaseRepo } from '../../host/schedule/lease.repo.ts';
import { DatabaseClock } from '../../host/storage/database-clock.ts';
import { migrate } from '../../host/storage/migrate.ts';
import { MARIADB_URL, mariadbTest, withServer } from '../helpers/db.ts';

/*
 * On MySQL/MariaDB leases are judged by the database's clock: a host whose own clock runs two
 * minutes ahead of the database does not take a lease another host holds, until the lease has run
 * out by the database's time. The database's clock is set back two minutes for every session
 * (`SET timestamp`), as a database host whose clock differs from this one's.
 */

await mariadbTest('MariaDB: a host whose clock runs 2 minutes ahead of the database judges leases by the database’s clock', async (t) => {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withServer(MARIADB_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
  t.teardown(() => withServer(MARIADB_URL, (db) => db.raw(`drop database if exists \`${name}\``)));
  const url = new URL(MARIADB_URL);
  url.pathname = `/${name}`;
  const behind = 120_000;
  const db = knex({
    client: 'mysql2',
    connection: url.toString(),
    pool: {
      min: 0,
      max: 1,
      afterCreate: (conn: { query(sql: string, cb: (err: Error | null) => void): void }, done: (err: Error | null, conn: unknown) => void) =>
        conn.query(`set timestamp = unix_timestamp(now(6)) - ${behind / 1000}`, (err) => done(err, conn)),
    },
  });
  t.teardown(() => db.destroy());
  // Migrated on a connection of its own (the migration holds one for its lock and needs another).
  const plain = knex({ client: 'mysql2', connection: url.toString() });
  await migrate(plain).finally(() => plain.destroy());
  const leases = new LeaseRepo(db);
  const real = Date.now();
  // Host A's clock agrees with the database; host B's runs 2 minutes ahead of it.
  const a = new DatabaseClock(db, new TestClock(new Date(real - behind)), silentLogger(), () => Date.now() - behind);
  const bOwn = new TestClock(new Date(real));
  const b = new DatabaseClock(db, bOwn, silentLogger());
  // `SET timestamp` stops the session's clock at that moment: set again just before each reading
  // (from SYSDATE, the real time), on the pool's one connection, so the stopped clock is not stale.
  const behindNow = () => db.raw(`set timestamp = unix_timestamp(sysdate(6)) - ${behind / 1000}`);
  // Up to three readings: a stall of a second between setting the clock and reading it (a loaded
  // machine) shows as an offset; a real disagreement shows on every reading.
  const reading = async (clock: DatabaseClock, good: (ms: number) => boolean): Promise<number> => {
    let ms = 0;
    for (let i = 0; i < 3; i++) {
      await behindNow();
      ms = await clock.measure();
      if (good(ms)) break;
    }
    return ms;
  };
  t.is(await reading(a, (ms) => ms === 0), 0, 'A agrees with the database');
  const offset = await reading(b, (ms) => Math.abs(ms + behind) < 2_000);
  t.true(Math.abs(offset + behind) < 2_000, `B measured ${offset} ms`);

  t.true(await leases.take('investigation-like', 'host-a', 15_000, a.now().getTime()));
  const held = (await leases.get('investigation-like'))!;
  t.true(held.until_ms <= bOwn.now().getTime(), 'by its own clock B would think the lease had run out');
  t.false(await leases.take('investigation-like', 'host-b', 15_000, b.now().getTime()), 'by the database’s clock it holds');
  bOwn.advance(16_000);
  t.true(await leases.take('investigation-like', 'host-b', 15_000, b.now().getTime()), 'once run out by the database’s clock, B takes it');
});
