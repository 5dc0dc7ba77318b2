import type { Knex } from 'knex';

/** People who may sign in. The first owner is created by bootstrap; the rest by the people API. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('people', (t) => {
    t.string('email', 254).primary();
    t.string('name', 200).notNullable();
    t.string('role', 16).notNullable();
    t.text('teams').notNullable();
    t.text('tags').notNullable();
    t.boolean('enabled').notNullable();
    t.string('created_at', 30).notNullable();
    t.string('updated_at', 30).notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('people');
}
