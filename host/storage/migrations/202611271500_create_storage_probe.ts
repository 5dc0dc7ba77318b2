import type { Knex } from 'knex';

/**
 * Readiness (host/health): one row that `GET /health/ready` rewrites to prove the database takes
 * writes (a full disk, a read-only or unreachable database answer 503). One row for every host:
 * the write is what counts, not what it leaves.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('storage_probe', (t) => {
    t.integer('id').primary();
    t.string('at', 30).notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('storage_probe');
}
