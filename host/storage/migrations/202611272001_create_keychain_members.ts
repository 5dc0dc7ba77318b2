import type { Knex } from 'knex';

/**
 * The installs of the keychain other than the home: on the home, the list it keeps (paired,
 * heard from, removed only by an owner); on a member, the home's list as last received (what a
 * take-over starts from).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('keychain_members', (t) => {
    t.string('fingerprint', 39).primary();
    t.string('name', 100).notNullable().unique();
    // The install's Ed25519 identity key and its X25519 keychain key, raw base64url.
    t.string('install_key', 100).notNullable();
    t.string('box_key', 100).notNullable();
    t.string('address', 500).nullable();
    t.string('version', 50).nullable();
    t.string('paired_at', 30).notNullable();
    t.string('last_seen_at', 30).nullable();
    // The parts it keeps its own, and the bundle (epoch, version) of each part it last applied.
    t.text('own').notNullable();
    t.text('applied').notNullable();
    // The time and nonce of its last accepted poll: an older one, or the same again, is a replay.
    t.bigInteger('last_poll_ms').notNullable();
    t.string('last_nonce', 64).nullable();
    // The epoch whose take-over notice it acknowledged.
    t.integer('notified_epoch').notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('keychain_members');
}
