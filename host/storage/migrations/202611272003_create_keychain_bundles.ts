import type { Knex } from 'knex';

/**
 * The bundles of the keychain's parts, one per part: on the home the latest it built, on a
 * member the latest it applied. Encrypted under the content key and signed by the keychain key.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('keychain_bundles', (t) => {
    t.string('part', 32).primary();
    t.integer('epoch').notNullable();
    t.integer('version').notNullable();
    t.string('created_at', 30).notNullable();
    // HMAC-SHA256 of the part's settings under the content key: whether they changed.
    t.string('digest', 64).notNullable();
    t.string('iv', 32).notNullable();
    t.string('tag', 32).notNullable();
    t.text('ct', 'longtext').notNullable();
    t.string('signature', 100).notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('keychain_bundles');
}
