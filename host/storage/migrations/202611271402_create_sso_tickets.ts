import type { Knex } from 'knex';

/**
 * Tickets the single sign-on callback ends with (`/?sso=<ticket>`): found by the SHA-256 of the
 * ticket, redeemed once within 60 s for a session of `email`.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('sso_tickets', (t) => {
    t.string('ticket_hash', 64).primary();
    t.string('email', 254).notNullable();
    t.string('return_to', 512).notNullable();
    // The provider's refresh token (sealed), if it gave one: kept for rechecks once redeemed.
    t.text('refresh_token').nullable();
    t.bigInteger('created_ms').notNullable();
    t.bigInteger('expires_ms').notNullable().index();
    t.bigInteger('used_ms').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('sso_tickets');
}
