import type { Knex } from 'knex';

/**
 * `autonomy_levels.source`: who set the stored level. `api` for a level set over the API (or an
 * approved raise), `file` for one granted by `autonomy.json` in SERVICE_CONFIG_DIR, which the API
 * can then neither raise nor lower (409 `autonomy_file_managed`). Every row written before this
 * column came from the API.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('autonomy_levels', (t) => {
    t.string('source', 8).notNullable().defaultTo('api');
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('autonomy_levels', (t) => {
    t.dropColumn('source');
  });
}
