import type { Knex } from 'knex';

/** Every licence installed over the API or redeemed as a trial; the newest row is in force. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('licences', (t) => {
    t.increments('id').primary();
    t.text('body').notNullable();
    t.string('source', 16).notNullable();
    t.string('installed_by', 255).notNullable();
    t.string('installed_at', 30).notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('licences');
}
