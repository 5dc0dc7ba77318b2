import type { Knex } from 'knex';

/**
 * The keychain (host/keychain): this install's place in one, as one row (id 1), absent while the
 * install is in none. Keys are sealed with the secret key; only public keys are in the clear.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('keychain_state', (t) => {
    t.integer('id').primary();
    // `home` or `member`.
    t.string('role', 10).notNullable();
    t.string('keychain', 64).notNullable();
    // This install's name in the keychain and the address the others reach it at.
    t.string('name', 100).notNullable();
    t.string('address', 500).nullable();
    // Take-overs so far: bundles and keys of a higher epoch win.
    t.integer('epoch').notNullable();
    // The keychain's Ed25519 key: public (raw, base64url), private sealed (the home only).
    t.string('sign_key', 100).notNullable();
    t.text('sign_private').nullable();
    // The content key the bundles are encrypted with, sealed.
    t.text('content_key').notNullable();
    // This install's X25519 key for the keychain: public raw, private sealed.
    t.string('box_key', 100).notNullable();
    t.text('box_private').notNullable();
    // The home as this member knows it (a member only).
    t.text('home').nullable();
    t.text('scope').notNullable();
    // The parts this member keeps its own (as the home last said).
    t.text('own').notNullable();
    t.string('joined_at', 30).notNullable();
    // A member: the last reply of the home it verified; the last problem reaching it.
    t.string('last_contact_at', 30).nullable();
    t.text('last_problem').nullable();
    // When the next poll (member) or round of take-over notices (home) is due, in ms: claimed by one process.
    t.bigInteger('next_round_ms').notNullable();
    // The signed statement of the take-over that made the current epoch, forwarded to whoever asks.
    t.text('notice').nullable();
    // Set when another install took over while this one was the home: it says so.
    t.text('demoted').nullable();
    t.string('updated_at', 30).notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('keychain_state');
}
