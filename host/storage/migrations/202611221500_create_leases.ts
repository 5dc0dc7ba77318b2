import type { Knex } from 'knex';

/**
 * Leases for scheduled work (`leases`): one row per job (`poll:<connector>`, ...), naming the
 * host process that holds it and until when (milliseconds since the epoch on the service's
 * clock). Several host processes on one database run each job once: only the holder does it.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('leases', (t) => {
    t.string('name', 200).primary();
    t.string('holder', 200).notNullable();
    t.bigInteger('until_ms').notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('leases');
}
