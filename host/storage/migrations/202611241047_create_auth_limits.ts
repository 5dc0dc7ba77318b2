import type { Knex } from 'knex';

/**
 * One row per sign-in limit and subject (`code_client` + a client address, `password_address`
 * + an e-mail, ...): the row every check-and-count of that subject locks first, so that two
 * requests, in one host process or in several, never both read a count below the limit and
 * both add to it. It also holds the refusals of that subject not yet written to the ledger
 * (wrong admin tokens are recorded at most once a minute per client, with a count).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('auth_limits', (t) => {
    t.string('kind', 32).notNullable();
    t.string('subject', 300).notNullable();
    t.primary(['kind', 'subject']);
    t.bigInteger('touched_ms').notNullable();
    // Refusals since the last ledger event about this subject, and when that event was written.
    t.integer('unrecorded_wrong').notNullable().defaultTo(0);
    t.integer('unrecorded_limited').notNullable().defaultTo(0);
    t.bigInteger('first_unrecorded_ms').nullable();
    t.bigInteger('recorded_ms').nullable();
    t.index(['touched_ms']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('auth_limits');
}
