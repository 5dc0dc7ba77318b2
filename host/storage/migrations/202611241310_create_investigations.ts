import type { Knex } from 'knex';

/**
 * The investigation of episodes (host/investigation): one `investigations` row per episode
 * (requested in the episode's opening transaction, claimed under a lease so one host process runs
 * it, re-requested when new alerts join), the `verdicts` of each cause run and the `evidence`
 * they cite. Also the labels of each episode alert (`episode_alerts.labels`), which checks read.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('investigations', (t) => {
    t.string('episode_id', 40).primary();
    t.string('service', 200).notNullable();
    // pending | running | diagnosed | skipped
    t.string('state', 16).notNullable();
    // Counts runs: a re-run (new alerts joined) increments it; verdicts and evidence carry it.
    t.integer('run').notNullable();
    // The run whose verdicts the episode shows: the last one that finished.
    t.integer('diagnosed_run').nullable();
    t.bigInteger('requested_ms').notNullable();
    t.string('lease_holder', 64).nullable();
    t.bigInteger('lease_until_ms').nullable();
    t.string('started_at', 30).nullable();
    t.string('finished_at', 30).nullable();
    // JSON: {holds, unknown, summary}; null until diagnosed.
    t.text('diagnosis').nullable();
    // Why it was skipped (autonomy off), or null.
    t.string('note', 1000).nullable();
    t.index(['state', 'requested_ms']);
  });

  await db.schema.createTable('verdicts', (t) => {
    t.increments('id').primary();
    t.string('episode_id', 40).notNullable();
    t.integer('run').notNullable();
    t.string('cause', 130).notNullable();
    t.string('title', 200).notNullable();
    t.string('verdict', 16).notNullable();
    t.text('reason').notNullable();
    t.string('obstacle', 64).nullable();
    // JSON list of evidence ids.
    t.text('evidence_ids').notNullable();
    t.integer('took_ms').notNullable();
    // JSON or null.
    t.text('remedy').nullable();
    t.text('verification').nullable();
    t.integer('specificity').notNullable();
    t.float('strength').notNullable();
    t.integer('rank').notNullable();
    t.index(['episode_id', 'run']);
  });

  await db.schema.createTable('evidence', (t) => {
    t.string('id', 40).primary();
    t.string('episode_id', 40).notNullable();
    t.integer('run').notNullable();
    t.string('cause', 130).notNullable();
    t.string('source', 200).notNullable();
    t.string('kind', 40).notNullable();
    t.text('query').notNullable();
    t.string('at', 30).notNullable();
    // JSON, at most 16 KiB with the rest of the item.
    t.text('observed').notNullable();
    t.text('excerpt').notNullable();
    t.index(['episode_id', 'run']);
  });

  await db.schema.alterTable('episode_alerts', (t) => {
    // JSON of the alert's flattened labels when it joined; null for alerts of older episodes.
    t.text('labels').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('episode_alerts', (t) => t.dropColumn('labels'));
  await db.schema.dropTable('evidence');
  await db.schema.dropTable('verdicts');
  await db.schema.dropTable('investigations');
}
