import type { Knex } from 'knex';

/**
 * The audit log. `data` holds the canonical JSON text that was hashed, byte for byte;
 * `ledger_head` is the chain head that appends lock (MySQL) to serialise.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('ledger_events', (t) => {
    t.bigInteger('seq').primary();
    t.string('at', 30).notNullable();
    t.string('type', 100).notNullable();
    t.string('actor', 255).notNullable();
    t.text('reason').notNullable();
    t.text('data', 'mediumtext').notNullable();
    t.string('trace', 128).nullable().index();
    t.string('prev_hash', 64).notNullable();
    t.string('hash', 64).notNullable();
  });
  if (db.client.config.client === 'mysql2') {
    // The type and actor filters are prefix LIKEs: MySQL serves them from an index. SQLite's
    // LIKE is case-insensitive and cannot use these indexes at all, while each one costs a page
    // write per commit (a third of the append rate, docs/performance.md), so SQLite has none.
    await db.schema.alterTable('ledger_events', (t) => {
      t.index(['type']);
      t.index(['actor']);
    });
  }
  await db.schema.createTable('ledger_head', (t) => {
    t.integer('id').primary();
    t.bigInteger('seq').notNullable();
    t.string('hash', 64).notNullable();
  });
  await db('ledger_head').insert({ id: 1, seq: 0, hash: '0'.repeat(64) });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('ledger_head');
  await db.schema.dropTable('ledger_events');
}
