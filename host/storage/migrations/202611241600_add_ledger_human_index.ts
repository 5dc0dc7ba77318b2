import type { Knex } from 'knex';

/**
 * SQLite only: a partial index of the `human.*` events (deploys and actions people report), which
 * every investigation reads for the service's recent changes. Without it, finding them walks the
 * whole ledger backwards (SQLite has no index on `type`, see 202611220901_create_ledger_events):
 * 200 ms per read with 100,000 signal events, the event loop blocked meanwhile. Only `human.*`
 * rows are written to it, so appending any other event costs no page write. MySQL serves the
 * same read from its `type` index. LedgerRepo.find repeats the index's condition word for word
 * (SQLite uses a partial index only then); a test checks the plan.
 */
export async function up(db: Knex): Promise<void> {
  if (db.client.config.client === 'mysql2') return;
  await db.raw(`create index ledger_events_human on ledger_events (seq) where type like 'human.%'`);
}

export async function down(db: Knex): Promise<void> {
  if (db.client.config.client === 'mysql2') return;
  await db.raw('drop index if exists ledger_events_human');
}
