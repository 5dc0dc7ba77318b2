import type { Knex } from 'knex';

/** Signed `{seq, hash, at}` checkpoints of the chain; a copy also goes to a file in the data directory. */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('ledger_checkpoints', (t) => {
    t.bigInteger('seq').primary();
    t.string('hash', 64).notNullable();
    t.string('at', 30).notNullable();
    t.string('signature', 128).notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('ledger_checkpoints');
}
