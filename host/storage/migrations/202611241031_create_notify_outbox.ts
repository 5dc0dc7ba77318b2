import type { Knex } from 'knex';

/**
 * The notification outbox (`notify_outbox`): one row per message to one recipient or target,
 * written in the same transaction as the episode change it tells of, and taken by the delivery
 * worker under a lease (`lease_holder`, `lease_until_ms`) so two host processes never send one
 * twice. `notify_channels` keeps the outcome of the last attempt of each recipient and target.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('notify_outbox', (t) => {
    t.string('id', 36).primary();
    t.string('episode_id', 36).notNullable();
    // incident.opened | incident.escalated | incident.closed
    t.string('event', 32).notNullable();
    // email | target
    t.string('channel_kind', 16).notNullable();
    // An e-mail address or a connector name.
    t.string('channel', 254).notNullable();
    // JSON of the episode as it was when the row was written.
    t.text('episode').notNullable();
    // pending | sent | failed
    t.string('state', 16).notNullable();
    t.integer('attempts').notNullable();
    t.string('created_at', 30).notNullable();
    t.bigInteger('created_ms').notNullable();
    t.bigInteger('next_ms').notNullable();
    t.string('lease_holder', 64).nullable();
    t.bigInteger('lease_until_ms').nullable();
    t.text('last_problem').nullable();
    t.string('done_at', 30).nullable();
    t.index(['state', 'next_ms']);
    t.index(['episode_id']);
  });

  await db.schema.createTable('notify_channels', (t) => {
    // `email:<address>` or `target:<connector name>`.
    t.string('channel', 270).primary();
    t.string('channel_kind', 16).notNullable();
    t.string('name', 254).notNullable();
    t.boolean('ok').notNullable();
    t.text('last_problem').nullable();
    t.string('last_attempt_at', 30).notNullable();
    t.string('last_ok_at', 30).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.dropTable('notify_channels');
  await db.schema.dropTable('notify_outbox');
}
