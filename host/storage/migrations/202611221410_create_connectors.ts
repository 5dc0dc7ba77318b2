import type { Knex } from 'knex';

/**
 * Connectors added in the console (`connectors`: settings without secrets, the secrets sealed
 * with the cipher in a column of their own) and the outcome of the last check of every
 * connector, console- or file-managed (`connector_status`, keyed by name).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('connectors', (t) => {
    t.string('name', 63).primary();
    t.string('kind', 64).notNullable();
    // JSON of the settings with every writeOnly field taken out.
    t.text('settings').notNullable();
    // JSON object: JSON pointer of a writeOnly field -> its value sealed by the cipher.
    t.text('secrets').notNullable();
    t.string('created_at', 30).notNullable();
    t.string('updated_at', 30).notNullable();
    t.string('updated_by', 254).notNullable();
  });

  await db.schema.createTable('connector_status', (t) => {
    t.string('name', 63).primary();
    t.string('kind', 64).notNullable();
    t.boolean('ok').notNullable();
    // Null when the last check passed.
    t.text('last_problem').nullable();
    t.string('last_checked_at', 30).notNullable();
    // JSON of what the last check found (version, ...), or null.
    t.text('found').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('connector_status');
  await db.schema.dropTable('connectors');
}
