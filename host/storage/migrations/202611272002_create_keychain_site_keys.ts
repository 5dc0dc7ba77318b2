import type { Knex } from 'knex';

/** One-time site keys for adding an install, found by the SHA-256 of their secret (the secret is never kept). */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('keychain_site_keys', (t) => {
    t.string('hash', 64).primary();
    // A short reference to the key for the ledger and the console (not part of the secret).
    t.string('id', 16).notNullable().unique();
    t.string('created_at', 30).notNullable();
    t.string('created_by', 254).notNullable();
    t.bigInteger('expires_ms').notNullable();
    t.string('used_at', 30).nullable();
    t.string('used_by', 39).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('keychain_site_keys');
}
