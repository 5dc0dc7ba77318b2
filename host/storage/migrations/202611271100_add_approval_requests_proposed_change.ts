import type { Knex } from 'knex';

/**
 * `approval_requests.proposed_change`: for a request of kind `estate_change` (issue 22: lowering a
 * service's tier, or changing the approvers of a tier-1 or tier-2 service, waits for two
 * approvals), the change that approval applies, as JSON text: the service, its entry before and
 * the entry asked for. NULL for every other kind. While such a request is pending,
 * `open_key` is `estate_change:<service>`, so one service has at most one.
 */
export async function up(db: Knex): Promise<void> {
  await db.schema.alterTable('approval_requests', (t) => {
    t.text('proposed_change').nullable();
  });
}

export async function down(db: Knex): Promise<void> {
  await db.schema.alterTable('approval_requests', (t) => {
    t.dropColumn('proposed_change');
  });
}
