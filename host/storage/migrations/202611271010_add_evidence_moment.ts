import type { Knex } from 'knex';

/**
 * Which moment each evidence item was read at: the run's own moment (`opening`, `newest_signal`,
 * `asked`, `now`), `now` for a read of the present (a health URL), or `stated` for a moment the
 * check named itself (a window's end). Null for evidence recorded before this migration.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('evidence', (t) => {
    t.string('moment', 16).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('evidence', (t) => t.dropColumn('moment'));
}
