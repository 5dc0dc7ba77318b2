import type { Knex } from 'knex';

/**
 * `connector_status.failed_by`: which call set the last problem (`test` for a test or check,
 * `poll` for a poll), null while the connector is fine. It lets a good poll clear only a poll's
 * problem (`connector.poll_recovered`) without reading the problem's words. Rows written before
 * this column get it from those words once, here.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('connector_status', (t) => {
    t.string('failed_by', 16).nullable();
  });
  await db('connector_status').where({ ok: false }).andWhere('last_problem', 'like', 'the poll%').update({ failed_by: 'poll' });
  await db('connector_status').where({ ok: false }).whereNull('failed_by').update({ failed_by: 'test' });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('connector_status', (t) => {
    t.dropColumn('failed_by');
  });
}
