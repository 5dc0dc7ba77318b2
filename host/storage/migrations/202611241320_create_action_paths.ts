import type { Knex } from 'knex';

/**
 * Acting (host/acting): one `action_paths` row per diagnosed episode run, carrying the path's
 * state (proposed, awaiting approval, executed, verifying, done) and what each step decided, so a
 * restarted host resumes it and never repeats an executed action; taken under a lease.
 * Approval requests for actions gain who may decide them, how many approvals they need, and the
 * episode they belong to (`approval_requests.approvers`, `approvals_needed`, `trace`).
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.createTable('action_paths', (t) => {
    t.string('episode_id', 40).primary();
    t.integer('run').notNullable();
    t.string('service', 200).notNullable();
    // pending | awaiting_approval | approved | verifying | done
    t.string('state', 24).notNullable();
    // When the next step is due (the verification's wait), service time.
    t.bigInteger('due_ms').notNullable();
    t.string('lease_holder', 64).nullable();
    t.bigInteger('lease_until_ms').nullable();
    // JSON of each step's record, null until reached.
    t.text('proposal').nullable();
    t.text('policy_decision').nullable();
    t.text('rehearsal').nullable();
    t.string('approval_id', 40).nullable();
    // JSON list: the approval request as last seen ({id, state, approvers, needed, expires_at, decisions}).
    t.text('approvals').nullable();
    // JSON: {connector, kind, params, key, executed_at, result, undo, undone_at}.
    t.text('action').nullable();
    t.text('verification').nullable();
    // mitigated | escalated, once done.
    t.string('outcome', 16).nullable();
    t.string('updated_at', 30).notNullable();
    t.index(['state', 'due_ms']);
  });
  await db.schema.alterTable('approval_requests', (t) => {
    t.integer('approvals_needed').nullable();
    t.text('approvers').nullable();
    t.string('trace', 40).nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('approval_requests', (t) => {
    t.dropColumn('approvals_needed');
    t.dropColumn('approvers');
    t.dropColumn('trace');
  });
  await db.schema.dropTable('action_paths');
}
