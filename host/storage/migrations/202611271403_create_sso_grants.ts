import type { Knex } from 'knex';

/**
 * The identity provider's refresh token of each person who signed in with one (sealed), and
 * when the provider is next asked whether the person may still sign in (`recheck_hours`).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('sso_grants', (t) => {
    t.string('email', 254).primary();
    t.text('refresh_token').notNullable();
    t.string('issuer', 512).notNullable();
    t.bigInteger('next_check_ms').notNullable().index();
    t.bigInteger('updated_ms').notNullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('sso_grants');
}
