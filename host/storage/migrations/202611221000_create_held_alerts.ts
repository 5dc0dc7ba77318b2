import type { Knex } from 'knex';

/**
 * Every alert the service has taken in, by fingerprint: `firing` ones are the held set; resolved
 * and released ones stay as history (first and last seen) for the baseline.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('held_alerts', (t) => {
    t.string('fingerprint', 512).primary();
    t.string('source', 64).notNullable();
    t.string('name', 500).notNullable();
    t.string('severity', 16).notNullable();
    t.string('status', 16).notNullable();
    t.string('service', 200).nullable();
    t.text('labels', 'mediumtext').notNullable();
    t.text('summary').notNullable();
    t.string('first_seen', 30).notNullable();
    t.string('last_seen', 30).notNullable();
    t.string('ended_at', 30).nullable();
    t.index(['status', 'last_seen']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('held_alerts');
}
