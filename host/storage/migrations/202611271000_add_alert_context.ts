import type { Knex } from 'knex';

/**
 * What an alerting tool says of an alert beyond its labels (`{starts_at, expression}` as JSON:
 * when the condition began, the rule's PromQL), kept with the held alert and with the episode's
 * member, so the investigation reads the moment and the window the alert itself looked at.
 * Null when the tool says nothing (and for every alert taken before this migration).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('held_alerts', (t) => {
    t.text('context').nullable();
  });
  await db.schema.alterTable('episode_alerts', (t) => {
    t.text('context').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('episode_alerts', (t) => t.dropColumn('context'));
  await db.schema.alterTable('held_alerts', (t) => t.dropColumn('context'));
}
