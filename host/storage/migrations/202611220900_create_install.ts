import type { Knex } from 'knex';

/** The single row that identifies this install: fingerprint, signing key, admin token hash, mode. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('install', (t) => {
    t.integer('id').primary();
    t.string('fingerprint', 64).notNullable();
    t.text('signing_public_key').notNullable();
    t.text('signing_private_key').notNullable();
    t.string('admin_token_hash', 64).nullable();
    t.string('mode', 16).notNullable();
    t.string('trial_redeemed_at', 30).nullable();
    t.string('created_at', 30).notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('install');
}
