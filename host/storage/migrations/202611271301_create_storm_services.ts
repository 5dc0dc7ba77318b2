import type { Knex } from 'knex';

/**
 * The services whose alerts a storm episode holds (issue 22): one row per (storm, service), so a
 * held-back service's later alerts join the same storm while it is open, and the storm shows how
 * many services and alerts it holds. Owned by the episodes area.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('storm_services', (t) => {
    t.string('episode_id', 40).notNullable();
    t.string('service', 200).notNullable();
    t.integer('alerts').notNullable();
    t.string('joined_at', 30).notNullable();
    t.primary(['episode_id', 'service']);
    t.index(['service']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('storm_services');
}
