import type { Knex } from 'knex';

/**
 * Single sign-on logins under way: one row per GET /v1/auth/sso/start, found by the SHA-256 of
 * its `state`, holding the nonce and the PKCE verifier (sealed) server-side. Used once, within
 * ten minutes, by the callback.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('sso_logins', (t) => {
    t.string('state_hash', 64).primary();
    t.text('secrets').notNullable();
    t.string('return_to', 512).notNullable();
    t.bigInteger('created_ms').notNullable();
    t.bigInteger('expires_ms').notNullable().index();
    t.bigInteger('used_ms').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('sso_logins');
}
