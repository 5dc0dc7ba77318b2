import type { Knex } from 'knex';

/** Named settings documents (mail, ...), each owned by the area that reads it; secrets inside are sealed. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('settings', (t) => {
    t.string('name', 64).primary();
    t.text('value', 'mediumtext').notNullable();
    t.string('updated_at', 30).notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('settings');
}
