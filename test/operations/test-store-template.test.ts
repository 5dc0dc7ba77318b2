import { randomBytes } from 'node:crypto';
import { createMigrated, MARIADB_URL, mariadbTest, migrateDatabase, withServer } from '../helpers/db.ts';

/** Every table's definition and rows (the migrations' own times left out: they differ by run). */
async function schemaOf(name: string): Promise<Record<string, { create: string; rows: unknown[] }>> {
  return withServer(MARIADB_URL, async (db) => {
    const [tables] = (await db.raw('select table_name as t from information_schema.tables where table_schema = ? order by table_name', [name])) as [
      Array<{ t: string }>,
    ];
    const out: Record<string, { create: string; rows: unknown[] }> = {};
    for (const { t } of tables) {
      const [[row]] = (await db.raw(`show create table \`${name}\`.\`${t}\``)) as [[Record<string, string>]];
      const [rows] = (await db.raw(`select * from \`${name}\`.\`${t}\``)) as [Array<Record<string, unknown>>];
      out[t] = {
        create: row!['Create Table']!.replace(/ AUTO_INCREMENT=\d+/, ''),
        rows: rows.map(({ migration_time: _time, ...rest }) => JSON.stringify(rest)).sort(),
      };
    }
    return out;
  });
}

await mariadbTest(
  "a MySQL test store copied from the suite's schema template is the schema the migrations make, table by table, with the same rows",
  async (t) => {
    const migrated = `t_${randomBytes(6).toString('hex')}`;
    const copied = `t_${randomBytes(6).toString('hex')}`;
    t.teardown(() =>
      withServer(MARIADB_URL, async (db) => {
        await db.raw(`drop database if exists \`${migrated}\``);
        await db.raw(`drop database if exists \`${copied}\``);
      }),
    );
    await withServer(MARIADB_URL, (db) => db.raw(`create database \`${migrated}\` character set utf8mb4 collate utf8mb4_bin`));
    await migrateDatabase(MARIADB_URL, migrated);
    await createMigrated(MARIADB_URL, copied);
    const want = await schemaOf(migrated);
    const got = await schemaOf(copied);
    t.true(Object.keys(want).length > 50, `${Object.keys(want).length} tables`);
    t.deepEqual(Object.keys(got), Object.keys(want));
    for (const table of Object.keys(want)) t.deepEqual(got[table], want[table], table);
  },
);
