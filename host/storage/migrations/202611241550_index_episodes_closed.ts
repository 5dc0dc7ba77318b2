import type { Knex } from 'knex';

/**
 * The digest counts episodes closed in a time window (GET /v1/digest): `t_close_ms` gets an
 * index so that a 90-day window reads only its own rows, not the whole table.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('episodes', (t) => {
    t.index(['t_close_ms']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('episodes', (t) => {
    t.dropIndex(['t_close_ms']);
  });
}
