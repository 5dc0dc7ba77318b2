import type { Knex } from 'knex';

/**
 * Heartbeats of the alerting pipeline (intake): one row per source and dead-man's-switch alert
 * (`Watchdog`, `DeadMansSwitch`) with when it last arrived, the interval learned between arrivals,
 * and whether it is `alive` or `missing` (an incident was raised because it stopped arriving).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('heartbeats', (t) => {
    t.string('source', 40).notNullable();
    t.string('name', 200).notNullable();
    t.bigInteger('last_seen_ms').notNullable();
    // The time between the last two arrivals; null until a second one.
    t.bigInteger('interval_ms').nullable();
    // alive | missing
    t.string('state', 16).notNullable();
    t.bigInteger('missing_since_ms').nullable();
    t.primary(['source', 'name']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('heartbeats');
}
