import type { Knex } from 'knex';

/** A member's record of each carried part: the bundle it applied last, and the last one it refused and why. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('keychain_parts', (t) => {
    t.string('part', 32).primary();
    t.integer('applied_epoch').nullable();
    t.integer('applied_version').nullable();
    t.string('applied_at', 30).nullable();
    t.string('applied_from', 39).nullable();
    t.integer('refused_epoch').nullable();
    t.integer('refused_version').nullable();
    t.text('refused_reason').nullable();
    t.string('refused_at', 30).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('keychain_parts');
}
