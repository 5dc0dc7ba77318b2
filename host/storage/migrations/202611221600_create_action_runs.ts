import type { Knex } from 'knex';

/** Each action that passed the gate and ran: the hourly cap per service counts these. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('action_runs', (t) => {
    t.increments('id');
    t.string('service', 200).notNullable();
    t.string('kind', 100).notNullable();
    t.bigInteger('at_ms').notNullable();
    t.index(['service', 'at_ms']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('action_runs');
}
