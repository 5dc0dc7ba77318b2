import type { Knex } from 'knex';

/**
 * `action_paths.held_by_halt`: when the halt switch held a path's fix back (the decision abstained
 * because the install was halted, or the action gate refused the action as halted), the time it
 * did, else null. Once the halt is released, such a path of a still-open episode is proposed
 * again (host/acting, docs/acting.md) instead of leaving the incident open with nothing to do.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('action_paths', (t) => {
    t.string('held_by_halt', 30).nullable();
    // Read by every pass of the acting worker: usually no row has it.
    t.index(['held_by_halt']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('action_paths', (t) => {
    t.dropIndex(['held_by_halt']);
    t.dropColumn('held_by_halt');
  });
}
