import type { Knex } from 'knex';

/**
 * Why a person is suspended by single sign-on or the directory (`directory`: left every mapped
 * group; `provider`: the identity provider refused a refresh), NULL otherwise. Kept apart from a
 * disabling by hand: the sync restores only the people it suspended itself.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('people', (t) => {
    t.string('suspended', 16).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('people', (t) => {
    t.dropColumn('suspended');
  });
}
