import type { Knex } from 'knex';

/**
 * Episodes (incidents), the alerts each one gathered, the label values the query language
 * searches as `data.<key>`, and every time an alert started firing (the baseline's history).
 *
 * The query language must answer the same on SQLite and MySQL, so on MySQL the searched tables
 * compare byte for byte like SQLite does: a binary collation without trailing-space padding
 * (`utf8mb4_nopad_bin` on MariaDB, `utf8mb4_0900_bin` on MySQL 8). Text matching (`~`) reads
 * the `*_lc` columns, lower-cased by the service, so neither engine's case folding is involved.
 */
export async function up(db: Knex): Promise<void> {
  const mysql = db.client.config.client === 'mysql2';
  const collation = mysql ? await binaryCollation(db) : undefined;
  const binary = (t: Knex.CreateTableBuilder): void => {
    if (collation !== undefined) t.collate(collation);
  };

  await db.schema.createTable('episodes', (t) => {
    binary(t);
    t.string('id', 40).primary();
    t.string('kind', 16).notNullable();
    t.string('state', 16).notNullable();
    t.string('service', 200).notNullable();
    t.string('service_lc', 200).notNullable();
    // Equals `service` while the episode is open, NULL once closed: at most one open episode
    // per service, enforced by the database even with several host processes.
    t.string('open_service', 200).nullable().unique();
    t.text('alert_names').notNullable();
    t.string('t_open', 30).notNullable();
    t.bigInteger('t_open_ms').notNullable();
    t.string('t_close', 30).nullable();
    t.bigInteger('t_close_ms').nullable();
    t.string('decision', 16).notNullable();
    t.string('outcome', 16).notNullable();
    t.string('result', 64).notNullable();
    t.string('note', 1000).nullable();
    t.string('note_lc', 1000).nullable();
    t.index(['t_open_ms', 'id']);
    t.index(['service', 't_open_ms']);
    t.index(['kind', 't_open_ms']);
    t.index(['state']);
  });

  await db.schema.createTable('episode_alerts', (t) => {
    binary(t);
    t.string('episode_id', 40).notNullable();
    t.string('fingerprint', 512).notNullable();
    t.string('name', 500).notNullable();
    t.string('name_lc', 500).notNullable();
    t.string('severity', 16).notNullable();
    t.string('source', 64).notNullable();
    t.text('summary').notNullable();
    t.string('joined_at', 30).notNullable();
    t.string('ended_at', 30).nullable();
    t.string('end_status', 16).nullable();
    t.text('baseline').notNullable();
    t.primary(['episode_id', 'fingerprint']);
    t.index(['name', 'episode_id']);
  });

  await db.schema.createTable('episode_data', (t) => {
    binary(t);
    t.string('episode_id', 40).notNullable();
    t.string('key', 100).notNullable();
    t.string('value', 200).notNullable();
    t.string('value_lc', 200).notNullable();
    t.primary(['episode_id', 'key', 'value']);
    t.index(['key', 'value', 'episode_id']);
  });

  await db.schema.createTable('alert_firings', (t) => {
    t.increments('id');
    t.string('fingerprint', 512).notNullable();
    t.bigInteger('fired_ms').notNullable();
    t.index(['fingerprint', 'fired_ms']);
    t.index(['fired_ms']);
  });

  await db.schema.alterTable('held_alerts', (t) => {
    t.string('episode_id', 40).nullable();
    t.string('fired_at', 30).nullable();
    t.index(['episode_id', 'status', 'service', 'fired_at']);
  });
  await db('held_alerts').update({ fired_at: db.ref('first_seen') });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('held_alerts', (t) => {
    t.dropIndex(['episode_id', 'status', 'service', 'fired_at']);
    t.dropColumn('episode_id');
    t.dropColumn('fired_at');
  });
  await db.schema.dropTable('alert_firings');
  await db.schema.dropTable('episode_data');
  await db.schema.dropTable('episode_alerts');
  await db.schema.dropTable('episodes');
}

async function binaryCollation(db: Knex): Promise<string> {
  const [rows] = (await db.raw('SELECT VERSION() AS v')) as [{ v: string }[]];
  return /mariadb/i.test(rows[0]?.v ?? '') ? 'utf8mb4_nopad_bin' : 'utf8mb4_0900_bin';
}
