// Acting (issue 15): after the diagnosis, the proposal, the policy decision, the rehearsal, the
// approval, the action through the gate, the verification, and the outcome or escalation.
import test, { type ExecutionContext } from 'ava';
import { MINUTE, SECOND } from '../../host/clock.ts';
import { AutonomyRepo } from '../../host/governance/autonomy.repo.ts';
import type { Level } from '../../host/governance/levels.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { acted, fixVendor } from '../helpers/fix-vendor.ts';
import { signedIn } from '../helpers/people.ts';
import { propose, type Performer } from '../../host/acting/proposal.ts';
import type { StoredVerdict } from '../../host/investigation/findings.model.ts';

interface Setup {
  ta: TestApp;
  log: string;
  approver: string;
}

async function setup(t: ExecutionContext, level: Level, opts: { rehearsalFails?: boolean; tier?: number; stillHolds?: boolean } = {}): Promise<Setup> {
  const v = fixVendor(t, {
    ...(opts.rehearsalFails === undefined ? {} : { rehearsalFails: opts.rehearsalFails }),
    ...(opts.stillHolds === undefined ? {} : { stillHolds: opts.stillHolds }),
    logKey: true,
  });
  const ta = await startApp(t, { env: { SERVICE_PLUGINS_DIR: v.dir } });
  await makeOperating(ta);
  const approver = await signedIn(ta, 'approver@bank.example', 'viewer');
  t.is((await ta.call('PUT', '/v1/connectors/fix', { body: { kind: 'fixer', settings: { log: v.log } } })).status, 201);
  const put = await ta.call('PUT', '/v1/estate/overrides', {
    body: {
      services: {
        jobs: {
          owner: 'owner@bank.example',
          approvers: ['approver@bank.example'],
          tier: opts.tier ?? 3,
          links: [{ kind: 'workload', match: 'job="jobs"', connector: 'fix' }],
        },
      },
    },
  });
  t.is(put.status, 200, JSON.stringify(put.body));
  await ta.app.ledger.transact(async (trx) =>
    new AutonomyRepo(ta.app.db).set(trx, { service: 'jobs', level, changed_at: ta.clock.now().toISOString(), changed_by: 'test', source: 'api' }),
  );
  return { ta, log: v.log, approver };
}

const alert = (status = 'firing') => ({ name: 'WorkerStuck', service: 'jobs', severity: 'critical', status, id: 'jobs-stuck' });

/** Fires the alert, opens the episode, investigates it and runs the action path's first steps. */
async function diagnosed(ta: TestApp): Promise<string> {
  t_ok(await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: alert() }));
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  await ta.app.investigation.investigations.run();
  await ta.app.acting.acting.run();
  return ((await ta.call('GET', '/v1/episodes?query=service:jobs')).body.episodes as any[])[0].id;
}
function t_ok(r: { status: number; body: unknown }): void {
  if (r.status >= 300) throw new Error(JSON.stringify(r.body));
}
const episode = async (ta: TestApp, id: string) => (await ta.call('GET', `/v1/episodes/${id}`)).body;
const types = (ep: any) => ep.timeline.map((e: any) => e.type) as string[];

test('shadow: the proposal and what would have been done are recorded, nothing runs, and the episode is escalated', async (t) => {
  const { ta, log } = await setup(t, 'shadow');
  const id = await diagnosed(ta);
  const ep = await episode(ta, id);
  t.like(ep.proposal, {
    action: 'restart',
    connector: 'fix',
    params: { target: 'worker' },
    cause: 'fixpack/stuck',
    verify: { cause: 'fixpack/stuck', expect: 'ruled_out', after_s: 60 },
  });
  t.like(ep.policy_decision, { decision: 'abstain', level: 'shadow' });
  t.regex(ep.policy_decision.reason, /^shadow: would run restart via fix/);
  t.is(ep.decision, 'abstain');
  t.is(ep.path_state, 'done');
  t.deepEqual(acted(log), [], 'nothing ran');
  t.true(types(ep).includes('decision.proposed'));
  t.true(types(ep).includes('decision.policy'));
  t.true(types(ep).includes('outcome.escalated'));
  t.false(types(ep).some((x) => x.startsWith('action.')));
  t.true((await ta.app.verifyLedger()).ok);
});

test('L1: the rehearsal, an approval request to the service approvers, the approval, the action through the gate, and mitigated once verified', async (t) => {
  const { ta, log, approver } = await setup(t, 'L1');
  const id = await diagnosed(ta);
  let ep = await episode(ta, id);
  t.like(ep.policy_decision, { decision: 'act', level: 'L1', approval: true });
  t.like(ep.rehearsal, { ok: true, shown: 'would restart worker' });
  t.is(ep.path_state, 'awaiting_approval');
  t.like(ep.approvals[0], { state: 'pending', approvers: ['approver@bank.example'], needed: 1 });
  t.deepEqual(acted(log), [], 'nothing runs before the approval');
  // The approvers (only they) get an e-mail with the proposal, the evidence and the link.
  const asked = (await ta.app.db('notify_outbox').select('channel_kind', 'channel', 'episode').where({ event: 'incident.approval_requested' })) as any[];
  t.deepEqual(
    asked.map((r) => [r.channel_kind, r.channel]),
    [['email', 'approver@bank.example']],
  );
  t.regex(JSON.parse(asked[0].episode).report, /Approval needed: restart on jobs via fix[\s\S]*Evidence:[\s\S]*stuck/);
  const requestId = ep.approvals[0].id;
  // Only the service's approvers decide it: an admin who is not one is refused.
  const admin = await signedIn(ta, 'admin2@bank.example', 'admin');
  t.is((await ta.call('POST', `/v1/approvals/${requestId}/approve`, { token: admin, body: {} })).status, 403);
  const approved = await ta.call('POST', `/v1/approvals/${requestId}/approve`, { token: approver, body: {} });
  t.is(approved.status, 200, JSON.stringify(approved.body));
  t.is(approved.body.approval.state, 'approved');
  await ta.app.acting.acting.run();
  t.is(acted(log).length, 1);
  t.regex(acted(log)[0]!, /^restart worker oncall-/);
  ep = await episode(ta, id);
  t.is(ep.path_state, 'verifying');
  t.is(ep.outcome, 'verifying', 'while the verification runs the episode is neither escalated nor mitigated');
  t.regex(ep.outcome_detail.reason, /^restart via fix ran; fixpack\/stuck is re-checked 60 s after it$/);
  t.like(ep.actions[0], { connector: 'fix', kind: 'restart', ok: true, shown: 'restarted worker', reversible: true });
  t.is(ep.actions[0].undo, undefined, 'what undo needs stays inside');
  // The alert resolves; after the remedy's wait the verification finds the cause ruled out.
  t_ok(await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: alert('resolved') }));
  ta.clock.advance(60 * SECOND);
  await ta.app.acting.acting.run();
  ep = await episode(ta, id);
  t.is(ep.outcome, 'mitigated');
  t.like(ep.outcome_detail, { value: 'mitigated' });
  t.like(ep.verification, { mitigated: true, alerts_resolved: true });
  const kinds = types(ep);
  for (const k of [
    'decision.proposed',
    'decision.policy',
    'action.rehearsed',
    'approval.requested',
    'approval.decided',
    'action.executed',
    'outcome.mitigated',
  ])
    t.true(kinds.includes(k), k);
  t.true(kinds.indexOf('action.executed') > kinds.indexOf('approval.decided'));
  // The call is recorded as begun, committed before the connector is called: a crash during it leaves that record.
  t.true(kinds.indexOf('action.started') > kinds.indexOf('approval.decided') && kinds.indexOf('action.started') < kinds.indexOf('action.executed'));
  t.like(ep.timeline.find((e: any) => e.type === 'action.started').data, { action: 'restart', connector: 'fix', params: { target: 'worker' } });
  t.is((await ta.call('GET', '/v1/episodes?query=outcome:mitigated')).body.episodes.length, 1);
  t.true((await ta.app.verifyLedger()).ok);
});

test('alerts that clear while the re-checked cause still holds are no mitigation: the path escalates', async (t) => {
  const { ta, log, approver } = await setup(t, 'L1', { stillHolds: true });
  const id = await diagnosed(ta);
  const requestId = (await episode(ta, id)).approvals[0].id;
  t.is((await ta.call('POST', `/v1/approvals/${requestId}/approve`, { token: approver, body: {} })).status, 200);
  await ta.app.acting.acting.run();
  t.is(acted(log).length, 1);
  t_ok(await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: alert('resolved') }));
  ta.clock.advance(60 * SECOND);
  await ta.app.acting.acting.run();
  const ep = await episode(ta, id);
  t.not(ep.outcome, 'mitigated');
  t.like(ep.verification, { mitigated: false, alerts_resolved: true, verdict: 'holds', by: 'check' });
  t.false(types(ep).includes('outcome.mitigated'));
  t.true(types(ep).includes('outcome.escalated'));
  t.regex(ep.timeline.find((e: any) => e.type === 'outcome.escalated').reason, /the remedy did not work: fixpack\/stuck is holds/);
  t.is((await ta.call('GET', '/v1/episodes?query=outcome:mitigated')).body.episodes.length, 0);
});

test('L1 under halt: the approved action is refused by the gate and the episode escalated', async (t) => {
  const { ta, log, approver } = await setup(t, 'L1');
  const id = await diagnosed(ta);
  const requestId = (await episode(ta, id)).approvals[0].id;
  t.is((await ta.call('POST', '/v1/halt', { body: { by: 'owner@bank.example', reason: 'incident freeze' } })).status, 200);
  t.is((await ta.call('POST', `/v1/approvals/${requestId}/approve`, { token: approver, body: {} })).status, 200);
  await ta.app.acting.acting.run();
  await ta.app.governance.gate.idle();
  t.deepEqual(acted(log), []);
  const ep = await episode(ta, id);
  t.is(ep.path_state, 'done');
  t.true(types(ep).includes('outcome.escalated'));
  const refused = (await ta.call('GET', '/v1/ledger?type=action.refused')).body.events as any[];
  t.is(refused.length, 1);
  t.like(refused[0].data, { service: 'jobs', kind: 'restart', refused: 'halted' });
});

test('L1: a rejection or 30 minutes without a decision escalate; nothing runs', async (t) => {
  const { ta, log, approver } = await setup(t, 'L1');
  const id = await diagnosed(ta);
  t.is((await ta.call('POST', `/v1/approvals/${(await episode(ta, id)).approvals[0].id}/reject`, { token: approver, body: {} })).status, 200);
  await ta.app.acting.acting.run();
  let ep = await episode(ta, id);
  t.is(ep.path_state, 'done');
  t.like(ep.approvals[0], { state: 'rejected' });
  t.true(types(ep).includes('outcome.escalated'));

  // A second service whose request nobody decides.
  t_ok(
    await ta.call('PUT', '/v1/estate/overrides', {
      body: { services: { jobs: { approvers: ['approver@bank.example'] }, batch: { approvers: ['approver@bank.example'] } } },
    }),
  );
  await ta.app.ledger.transact(async (trx) =>
    new AutonomyRepo(ta.app.db).set(trx, { service: 'batch', level: 'L1', changed_at: ta.clock.now().toISOString(), changed_by: 'test', source: 'api' }),
  );
  t_ok(await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { ...alert(), service: 'batch', id: 'batch-stuck' } }));
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  await ta.app.investigation.investigations.run();
  await ta.app.acting.acting.run();
  const batch = ((await ta.call('GET', '/v1/episodes?query=service:batch')).body.episodes as any[])[0].id;
  t.is((await episode(ta, batch)).path_state, 'awaiting_approval');
  ta.clock.advance(30 * MINUTE);
  await ta.app.acting.acting.run();
  ep = await episode(ta, batch);
  t.is(ep.path_state, 'done');
  t.like(ep.approvals[0], { state: 'expired' });
  t.true(types(ep).includes('outcome.escalated'));
  t.deepEqual(acted(log), []);
});

test('a failed rehearsal means no action and an escalation', async (t) => {
  const { ta, log } = await setup(t, 'L1', { rehearsalFails: true });
  const id = await diagnosed(ta);
  const ep = await episode(ta, id);
  t.like(ep.rehearsal, { ok: false });
  t.is(ep.path_state, 'done');
  t.deepEqual(ep.approvals, [], 'nobody is asked to approve what would not work');
  t.true(types(ep).includes('outcome.escalated'));
  t.deepEqual(acted(log), []);
});

test('a tier-1 service needs two different approvers', async (t) => {
  // Made tier 1 with its two approvers from tier 3 (a raise): changing who approves a tier-1
  // service would wait for approvals itself (test/estate/estate-guard.test.ts).
  const { ta, log, approver } = await setup(t, 'L1');
  const second = await signedIn(ta, 'second@bank.example', 'viewer');
  t_ok(
    await ta.call('PUT', '/v1/estate/overrides', {
      body: {
        services: {
          jobs: { tier: 1, approvers: ['approver@bank.example', 'second@bank.example'], links: [{ kind: 'workload', match: 'job="jobs"', connector: 'fix' }] },
        },
      },
    }),
  );
  const id = await diagnosed(ta);
  const requestId = (await episode(ta, id)).approvals[0].id;
  t.is((await ta.call('POST', `/v1/approvals/${requestId}/approve`, { token: approver, body: {} })).body.approval.state, 'pending');
  await ta.app.acting.acting.run();
  t.deepEqual(acted(log), [], 'one approval is not enough for tier 1');
  t.is((await ta.call('POST', `/v1/approvals/${requestId}/approve`, { token: second, body: {} })).body.approval.state, 'approved');
  await ta.app.acting.acting.run();
  t.is(acted(log).length, 1);
});

test('an admin undoes a reversible executed action through the gate: action.undone, once', async (t) => {
  const { ta, log, approver } = await setup(t, 'L1');
  const id = await diagnosed(ta);
  t.is((await ta.call('POST', `/v1/approvals/${(await episode(ta, id)).approvals[0].id}/approve`, { token: approver, body: {} })).status, 200);
  await ta.app.acting.acting.run();
  t.is(acted(log).length, 1);
  t.is((await ta.call('POST', `/v1/episodes/${id}/actions/1/undo`, { token: approver })).status, 403, 'admins only');
  t.is((await ta.call('POST', `/v1/episodes/${id}/actions/2/undo`)).status, 404);
  const undone = await ta.call('POST', `/v1/episodes/${id}/actions/1/undo`);
  t.is(undone.status, 200, JSON.stringify(undone.body));
  t.like(undone.body.action, { kind: 'restart', reversible: false });
  t.truthy(undone.body.action.undone_at);
  t.deepEqual(acted(log).slice(1), ['undo worker']);
  t.is((await ta.call('POST', `/v1/episodes/${id}/actions/1/undo`)).status, 409, 'once');
  const ep = await episode(ta, id);
  t.truthy(ep.actions[0].undone_at);
  t.true(types(ep).includes('action.undone'));
  t.true((await ta.app.verifyLedger()).ok);
});

test('a host that stopped while the action ran leaves it executing: the next pass escalates and never runs it again', async (t) => {
  const { ta, log } = await setup(t, 'L1');
  const id = await diagnosed(ta);
  // As a host that died right after marking the action: state executing, the action not recorded,
  // its lease run out. (Set straight from awaiting approval: approving through the API would nudge
  // this host's own pass, which could take the action before the test stands in for the dead host.)
  t.is((await episode(ta, id)).path_state, 'awaiting_approval');
  await ta.app.db('action_paths').where({ episode_id: id }).update({ state: 'executing', lease_holder: 'act-dead-host', lease_until_ms: 0 });
  await ta.app.acting.acting.run();
  const ep = await episode(ta, id);
  t.is(ep.path_state, 'done');
  t.deepEqual(acted(log), [], 'not run again');
  const escalated = ep.timeline.filter((e: any) => e.type === 'outcome.escalated');
  t.is(escalated.length, 1);
  t.regex(escalated[0].reason, /not repeated/);
});

test("a change's remedy is verified by the symptom that held beside it, and with none by its alerts clearing", (t) => {
  const v = (cause: string, remedy: unknown = null, verification: unknown = null) =>
    ({ cause, title: cause, verdict: 'holds', reason: 'r', obstacle: null, evidence: [], took_ms: 1, remedy, verification }) as StoredVerdict;
  const revert = { action: 'revert', params: { connector: 'git', sha: 'a'.repeat(40) } };
  const git: Performer = { name: 'git', kind: 'git', declaration: { description: 'd', params: {}, rehearsable: true, reversible: true }, fault: null };
  const withSymptom = propose([v('core/recent-change', revert), v('prometheus/error-rate')], null, () => [git]);
  t.true(withSymptom.ok);
  if (withSymptom.ok) t.like(withSymptom.proposal.verify, { cause: 'prometheus/error-rate', expect: 'ruled_out', by: 'check' });
  const alone = propose([v('core/recent-change', revert)], null, () => [git]);
  if (alone.ok) t.like(alone.proposal.verify, { cause: 'core/recent-change', by: 'alerts' });
  else t.fail(alone.why);
  const named = propose([v('fixpack/stuck', { action: 'revert', params: {} }, { cause: 'fixpack/stuck', expect: 'ruled_out', after_s: 30 })], null, () => [
    git,
  ]);
  if (named.ok) t.like(named.proposal.verify, { cause: 'fixpack/stuck', by: 'check', after_s: 30 });
  else t.fail(named.why);
});
