import type { Knex } from 'knex';

/**
 * The estate's tables. `estate_overrides`: one row per service a person added or overrode (the
 * document's entry as JSON); a row is an added service, and added services are what count
 * toward the licence. `estate_found`: what the last build assembled per name from discovery,
 * connectors' findings, alerts and deploys (replaced whole by each build). `estate_dependencies`:
 * dependencies people confirmed. `estate_suggestions`: suggested dependencies with their state;
 * a dismissed one stays, so no rebuild brings it back. `estate_state`: one row, the estate's
 * version (bumped by every change, read by every host process before it resolves) and when it
 * was last built.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('estate_overrides', (t) => {
    t.string('name', 200).primary();
    t.text('doc').notNullable();
    t.string('added_by', 254).notNullable();
    t.string('added_at', 30).notNullable();
    t.bigInteger('added_seq').notNullable();
    t.string('updated_at', 30).notNullable();
  });
  await db.schema.createTable('estate_found', (t) => {
    t.string('name', 200).primary();
    t.text('doc').notNullable();
  });
  await db.schema.createTable('estate_dependencies', (t) => {
    t.string('service', 200).notNullable();
    t.string('depends_on', 200).notNullable();
    t.string('origin', 16).notNullable();
    t.string('suggestion_id', 64).nullable();
    t.string('by', 254).notNullable();
    t.string('at', 30).notNullable();
    t.primary(['service', 'depends_on']);
  });
  await db.schema.createTable('estate_suggestions', (t) => {
    t.string('id', 64).primary();
    t.string('service', 200).notNullable();
    t.string('depends_on', 200).notNullable();
    t.text('evidence').notNullable();
    t.float('score').notNullable();
    // open | confirmed | dismissed
    t.string('state', 16).notNullable();
    t.string('updated_at', 30).notNullable();
    t.string('decided_by', 254).nullable();
  });
  await db.schema.createTable('estate_state', (t) => {
    t.integer('id').primary();
    t.bigInteger('version').notNullable();
    t.string('built_at', 30).nullable();
    t.string('build_job', 36).nullable();
  });
  await db('estate_state').insert({ id: 1, version: 1, built_at: null, build_job: null });
}

export async function down(db: Knex): Promise<void> {
  for (const t of ['estate_state', 'estate_suggestions', 'estate_dependencies', 'estate_found', 'estate_overrides']) await db.schema.dropTableIfExists(t);
}
