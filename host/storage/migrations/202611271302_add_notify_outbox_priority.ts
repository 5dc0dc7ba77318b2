import type { Knex } from 'knex';

/**
 * Critical first (issue 22): each outbox row keeps its message's priority (2 critical, 1
 * warning, 0 info) so delivery takes the most urgent due messages first; rows written before
 * this have 1. The index serves "pending, due, most urgent first".
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('notify_outbox', (t) => {
    t.integer('priority').notNullable().defaultTo(1);
    t.index(['state', 'priority', 'next_ms']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('notify_outbox', (t) => {
    t.dropIndex(['state', 'priority', 'next_ms']);
    t.dropColumn('priority');
  });
}
