import type { Knex } from 'knex';

/**
 * Sign-in: sessions (only the hash of each token), e-mailed codes (only an HMAC of each code),
 * the attempts the rate limits count, and each person's password (only its scrypt hash, with
 * the parameters it was made with).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('people', (t) => {
    t.string('password_hash', 300).nullable();
    t.string('password_set_at', 30).nullable();
    t.string('password_expires_at', 30).nullable();
    t.boolean('directory').notNullable().defaultTo(false);
  });

  await db.schema.createTable('sessions', (t) => {
    t.string('token_hash', 64).primary();
    // The person's e-mail; NULL for a break-glass session of the admin token.
    t.string('email', 254).nullable().index();
    t.string('actor', 254).notNullable();
    t.string('via', 16).notNullable();
    t.bigInteger('created_ms').notNullable();
    t.bigInteger('last_seen_ms').notNullable();
    // The latest moment it may live: 7 days after it opened, or the end of the password that opened it.
    t.bigInteger('ends_ms').notNullable();
    t.bigInteger('ended_ms').nullable();
    t.string('end_reason', 32).nullable();
  });

  await db.schema.createTable('sign_in_codes', (t) => {
    t.increments('id');
    t.string('email', 254).notNullable();
    t.string('code_hmac', 64).notNullable();
    t.bigInteger('created_ms').notNullable();
    t.bigInteger('expires_ms').notNullable();
    t.integer('tries').notNullable();
    t.bigInteger('used_ms').nullable();
    t.index(['email', 'created_ms']);
  });

  await db.schema.createTable('auth_attempts', (t) => {
    t.increments('id');
    t.string('kind', 32).notNullable();
    t.string('subject', 300).notNullable();
    t.bigInteger('at_ms').notNullable();
    t.index(['kind', 'subject', 'at_ms']);
    t.index(['at_ms']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('auth_attempts');
  await db.schema.dropTable('sign_in_codes');
  await db.schema.dropTable('sessions');
  await db.schema.alterTable('people', (t) => {
    t.dropColumn('password_hash');
    t.dropColumn('password_set_at');
    t.dropColumn('password_expires_at');
    t.dropColumn('directory');
  });
}
