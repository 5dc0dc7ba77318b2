import type { Knex } from 'knex';

/**
 * `episodes.outcome_detail`: JSON of how the outcome came about ({value, reason, at, told}), so
 * an episode says who was told and how, or why nobody was. Null for episodes older than this.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('episodes', (t) => {
    t.text('outcome_detail').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('episodes', (t) => {
    t.dropColumn('outcome_detail');
  });
}
