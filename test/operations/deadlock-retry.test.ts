import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { mariadbMissing, MARIADB_URL, withServer } from '../helpers/db.ts';
import { testNeeding } from '../helpers/needs.ts';
import { openDb } from '../../host/storage/db.ts';
import { UnitOfWork } from '../../host/storage/unit-of-work.ts';
import type { Trx } from '../../host/storage/db.ts';

const missing = await mariadbMissing();

testNeeding(
  missing,
  'MariaDB: a transaction InnoDB ends in a deadlock is run again and both changes land; a deadlock of every try goes up as it is',
  async (t) => {
    const name = `t_${randomBytes(6).toString('hex')}`;
    await withServer(MARIADB_URL, (db) => db.raw(`create database \`${name}\``));
    const url = new URL(MARIADB_URL);
    url.pathname = `/${name}`;
    const db = openDb({ databaseUrl: url.toString(), dataDir: tmpdir() });
    try {
      await db.schema.createTable('rows', (tb) => {
        tb.integer('id').primary();
        tb.integer('v').notNullable();
      });
      await db('rows').insert([
        { id: 1, v: 0 },
        { id: 2, v: 0 },
      ]);
      const work = new UnitOfWork(db);

      // Two transactions take the two rows in opposite orders, each waiting until both hold
      // their first: InnoDB ends one of them with a deadlock (1213).
      let holding = 0;
      let bothHold!: () => void;
      const together = new Promise<void>((resolve) => (bothHold = resolve));
      const runs = { a: 0, b: 0 };
      const crossing = (first: number, second: number, who: 'a' | 'b') => async (trx: Trx) => {
        runs[who] += 1;
        await trx('rows').where({ id: first }).increment('v', 1);
        if (++holding === 2) bothHold();
        await together;
        await trx('rows').where({ id: second }).increment('v', 10);
      };
      const [a, b] = await Promise.allSettled([work.run(crossing(1, 2, 'a')), work.run(crossing(2, 1, 'b'))]);
      t.is(a.status, 'fulfilled', a.status === 'rejected' ? String(a.reason) : '');
      t.is(b.status, 'fulfilled', b.status === 'rejected' ? String(b.reason) : '');
      t.is(runs.a + runs.b, 3, 'the transaction InnoDB ended ran once more');
      // Each committed once: its +1 and +10, nothing of the rolled-back run.
      const rows = await db('rows').orderBy('id');
      t.deepEqual(
        rows.map((r: { v: number }) => r.v),
        [11, 11],
      );

      // A deadlock every time: the error goes up after the tries, the change is not made.
      let tries = 0;
      const err = await t.throwsAsync(
        work.run(async (trx) => {
          tries += 1;
          await trx('rows').where({ id: 1 }).update({ v: 0 });
          throw Object.assign(new Error('Deadlock found when trying to get lock'), { code: 'ER_LOCK_DEADLOCK', errno: 1213 });
        }),
      );
      t.is((err as { code?: string }).code, 'ER_LOCK_DEADLOCK');
      t.is(tries, 5);
      t.is((await db('rows').where({ id: 1 }).first()).v, 11);
    } finally {
      await db.destroy();
      await withServer(MARIADB_URL, (d) => d.raw(`drop database if exists \`${name}\``));
    }
  },
);
