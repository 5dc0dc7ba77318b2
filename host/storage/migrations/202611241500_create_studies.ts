import type { Knex } from 'knex';

/**
 * The study (read-only rehearsal): one row per study in `studies` and one row per (service,
 * cause) judged in `study_verdicts`.
 *
 * `studies.running_key` is `study` while a study is running or stopping and NULL after: at most
 * one study at a time, enforced by the database even with several host processes.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('studies', (t) => {
    t.string('id', 40).primary();
    // running | stopping | finished | failed
    t.string('state', 16).notNullable();
    t.string('started_at', 30).notNullable();
    t.bigInteger('started_ms').notNullable();
    t.string('by', 254).notNullable();
    t.integer('minutes').notNullable();
    t.integer('done').notNullable().defaultTo(0);
    t.integer('total').notNullable().defaultTo(0);
    // The host process running it (the holder of the `study` lease).
    t.string('holder', 64).notNullable();
    t.string('finished_at', 30).nullable();
    t.text('reason').nullable();
    t.boolean('cut_short').notNullable().defaultTo(false);
    // JSON: the report, once finished.
    t.text('report', 'mediumtext').nullable();
    t.string('running_key', 16).nullable().unique();
    t.index(['started_ms']);
  });

  await db.schema.createTable('study_verdicts', (t) => {
    t.increments('id').primary();
    t.string('study_id', 40).notNullable();
    // Order in the study (service by service, cause by cause).
    t.integer('position').notNullable();
    t.string('service', 200).notNullable();
    t.string('cause', 130).notNullable();
    // can prove | can't yet | at the alert
    t.string('verdict', 16).notNullable();
    // The check's own verdict: holds | ruled_out | unknown | null (not run).
    t.string('check', 16).nullable();
    t.string('obstacle', 64).nullable();
    t.text('reason').notNullable();
    // JSON array of evidence items, kept for causes that hold now.
    t.text('evidence', 'mediumtext').nullable();
    t.unique(['study_id', 'service', 'cause']);
    t.index(['study_id', 'position']);
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('study_verdicts');
  await db.schema.dropTable('studies');
}
