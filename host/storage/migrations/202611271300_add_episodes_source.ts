import type { Knex } from 'knex';

/**
 * What bounds the episodes one source can open (issue 22, storms): each episode keeps the source
 * word of the alert that opened it (`source`) and whether it was opened for a service the estate
 * does not have (`unknown_service`, which the per-source limit counts). An index on
 * (source, t_open_ms) makes "how many in the last minute" a range read.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('episodes', (t) => {
    t.string('source', 64).nullable();
    t.boolean('unknown_service').notNullable().defaultTo(false);
    t.index(['source', 't_open_ms']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('episodes', (t) => {
    t.dropIndex(['source', 't_open_ms']);
    t.dropColumn('unknown_service');
    t.dropColumn('source');
  });
}
