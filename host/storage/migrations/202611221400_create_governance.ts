import type { Knex } from 'knex';

/**
 * Governance: each service's stored autonomy level (a service without a row runs at the
 * policy's default), approval requests and their decisions, and the halt switch (one row).
 *
 * `approval_requests.open_key` is `<kind>:<service>` while an autonomy raise is pending and NULL
 * otherwise: at most one open raise per service, enforced by the database even with several
 * host processes. `approval_decisions` has one row per request and person, so the same approver
 * can never count twice.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('autonomy_levels', (t) => {
    t.string('service', 200).primary();
    t.string('level', 8).notNullable();
    t.string('changed_at', 30).notNullable();
    t.string('changed_by', 254).notNullable();
  });

  await db.schema.createTable('approval_requests', (t) => {
    t.string('id', 40).primary();
    t.string('kind', 16).notNullable();
    t.string('state', 16).notNullable();
    t.string('service', 200).notNullable();
    t.string('from_level', 8).nullable();
    t.string('to_level', 8).nullable();
    t.string('action', 100).nullable();
    t.string('summary', 1000).notNullable();
    t.string('requested_by', 254).notNullable();
    t.string('requested_actor', 254).notNullable();
    t.string('requested_at', 30).notNullable();
    t.bigInteger('requested_ms').notNullable();
    t.bigInteger('expires_ms').notNullable();
    t.string('closed_at', 30).nullable();
    t.string('open_key', 240).nullable().unique();
    t.index(['state', 'expires_ms']);
    t.index(['requested_ms']);
  });

  await db.schema.createTable('approval_decisions', (t) => {
    t.string('request_id', 40).notNullable();
    t.string('decider', 254).notNullable();
    t.string('decision', 8).notNullable();
    t.string('note', 1000).nullable();
    t.string('at', 30).notNullable();
    t.bigInteger('at_ms').notNullable();
    t.primary(['request_id', 'decider']);
  });

  await db.schema.createTable('halt_switch', (t) => {
    t.integer('id').primary();
    t.boolean('halted').notNullable();
    t.string('by', 254).nullable();
    t.string('reason', 1000).nullable();
    t.string('at', 30).nullable();
  });
  await db('halt_switch').insert({ id: 1, halted: false, by: null, reason: null, at: null });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('halt_switch');
  await db.schema.dropTable('approval_decisions');
  await db.schema.dropTable('approval_requests');
  await db.schema.dropTable('autonomy_levels');
}
