import type { Knex } from 'knex';

/**
 * Discovery: jobs (`discovery_jobs`), one step per connection asked (`discovery_steps`) and the
 * service names found (`service_candidates`, one row per name and connector): candidates for a
 * person to add, never services.
 *
 * `discovery_jobs.running_key` is `discovery` while a job is queued or running and NULL after:
 * at most one job at a time, enforced by the database even with several host processes.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('discovery_jobs', (t) => {
    t.string('id', 40).primary();
    // queued | running | finished | failed
    t.string('state', 16).notNullable();
    t.string('started_at', 30).notNullable();
    t.bigInteger('started_ms').notNullable();
    t.string('finished_at', 30).nullable();
    // Progress heartbeat: a running job without progress for long is abandoned (its host stopped).
    t.bigInteger('touched_ms').notNullable();
    t.string('by', 254).notNullable();
    t.integer('connections').notNullable();
    t.integer('found').notNullable().defaultTo(0);
    t.integer('new_candidates').notNullable().defaultTo(0);
    t.integer('failed').notNullable().defaultTo(0);
    t.text('problem').nullable();
    t.string('running_key', 16).nullable().unique();
    t.index(['started_ms']);
  });

  await db.schema.createTable('discovery_steps', (t) => {
    t.string('job_id', 40).notNullable();
    t.string('connector', 63).notNullable();
    t.string('kind', 64).notNullable();
    // queued | running | finished | failed
    t.string('state', 16).notNullable();
    t.integer('found').notNullable().defaultTo(0);
    t.integer('dropped').notNullable().defaultTo(0);
    t.text('problem').nullable();
    t.boolean('cut_off').notNullable().defaultTo(false);
    t.integer('took_ms').nullable();
    t.string('started_at', 30).nullable();
    t.string('finished_at', 30).nullable();
    // JSON array of the names this step found (the candidates of the job).
    t.text('names').nullable();
    t.primary(['job_id', 'connector']);
  });

  await db.schema.createTable('service_candidates', (t) => {
    t.string('name', 200).notNullable();
    // The connector that found it.
    t.string('source', 63).notNullable();
    t.string('kind', 64).notNullable();
    // JSON array of {source, ...evidence}, as the connector last reported it.
    t.text('evidence').notNullable();
    t.string('first_found_at', 30).notNullable();
    t.string('last_found_at', 30).notNullable();
    t.string('first_job_id', 40).notNullable();
    t.string('last_job_id', 40).notNullable();
    t.primary(['name', 'source']);
    t.index(['source']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('service_candidates');
  await db.schema.dropTable('discovery_steps');
  await db.schema.dropTable('discovery_jobs');
}
