import type { Knex } from 'knex';

/**
 * Online licence confirmation (`licence_check`, one row, id 1): which licence the state is about
 * (a hash of its signature), when the next confirmation is due (claimed with a conditional
 * update, so one host process asks per period), and what the last attempt found. Services over
 * the licence's limit are reported once each (`licence_limit_reports`, keyed by service).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('licence_check', (t) => {
    t.integer('id').primary();
    // sha256 hex of the signature of the licence this row is about.
    t.string('licence_ref', 64).nullable();
    t.bigInteger('next_due_ms').notNullable();
    t.string('last_attempt_at', 30).nullable();
    t.string('last_confirmed_at', 30).nullable();
    // valid | revoked | unreachable | error
    t.string('last_result', 16).nullable();
    t.text('last_problem').nullable();
    // When this licence was first seen unconfirmed (reset by a confirmation).
    t.string('unconfirmed_since', 30).nullable();
    // licence_ref of a licence the server answered revoked for.
    t.string('revoked_ref', 64).nullable();
    // Which host process claimed the current period (random per process).
    t.string('claimed_by', 64).nullable();
  });

  await db.schema.createTable('licence_limit_reports', (t) => {
    t.string('service', 200).primary();
    t.string('reported_at', 30).notNullable();
    t.string('claim', 64).notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('licence_limit_reports');
  await db.schema.dropTable('licence_check');
}
