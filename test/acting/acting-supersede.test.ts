// Issue 22, item 3: one action path per episode at a time. Each alert of a new name joining an
// episode starts a new run; the run supersedes the approval request the path waited on (closed as
// `superseded`, its approvers told), and approving a closed request answers 409. On SQLite, and on
// MariaDB with TEST_DATABASE_URL; the approval racing the new run is tested with both at once.
// Two host processes: test/acting/acting-supersede-processes.test.ts.
import test, { type ExecutionContext } from 'ava';
import { SECOND } from '../../host/clock.ts';
import { AutonomyRepo } from '../../host/governance/autonomy.repo.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { acted, fixVendor, JOBS_ESTATE } from '../helpers/fix-vendor.ts';
import { signedIn } from '../helpers/people.ts';

async function setup(t: ExecutionContext): Promise<{ ta: TestApp; log: string; approver: string }> {
  const v = fixVendor(t);
  const ta = await startApp(t, { env: { SERVICE_PLUGINS_DIR: v.dir }, manualTick: true });
  await makeOperating(ta);
  const approver = await signedIn(ta, 'approver@bank.example', 'viewer');
  t.is((await ta.call('PUT', '/v1/connectors/fix', { body: { kind: 'fixer', settings: { log: v.log } } })).status, 201);
  const put = await ta.call('PUT', '/v1/estate/overrides', { body: JOBS_ESTATE });
  t.is(put.status, 200, JSON.stringify(put.body));
  await ta.app.ledger.transact(async (trx) =>
    new AutonomyRepo(ta.app.db).set(trx, { service: 'jobs', level: 'L1', changed_at: ta.clock.now().toISOString(), changed_by: 'test', source: 'api' }),
  );
  return { ta, log: v.log, approver };
}

/** Pushes an alert of `name` for jobs and lets grouping, the investigation and acting take their steps. */
async function push(t: ExecutionContext, ta: TestApp, name: string): Promise<void> {
  const r = await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name, service: 'jobs', severity: 'critical', id: `jobs-${name}` } });
  t.is(r.status, 202);
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  await ta.app.investigation.investigations.run();
  await ta.app.acting.acting.run();
}

const requests = async (ta: TestApp, state?: string) =>
  (await ta.call('GET', `/v1/approvals${state === undefined ? '' : `?state=${state}`}`)).body.approvals as Array<{ id: string; state: string }>;

test('three pushes leave one pending request: each new run supersedes the last, its approvers are told, and approving a closed request answers 409', async (t) => {
  const { ta, log, approver } = await setup(t);
  await push(t, ta, 'WorkerStuck');
  const [first] = await requests(ta, 'pending');
  t.truthy(first);
  await push(t, ta, 'QueueBacklog');
  await push(t, ta, 'JobsLate');
  const all = await requests(ta);
  t.is(all.length, 3);
  const pending = all.filter((r) => r.state === 'pending');
  t.is(pending.length, 1, JSON.stringify(all));
  t.is(all.filter((r) => r.state === 'superseded').length, 2);
  const id = (await ta.call('GET', '/v1/episodes')).body.episodes[0].id as string;
  const ep = (await ta.call('GET', `/v1/episodes/${id}`)).body;
  t.is(ep.path_state, 'awaiting_approval');
  t.is(ep.approvals[0].id, pending[0]!.id, 'the path waits on the newest request only');
  t.is(ep.timeline.filter((e: any) => e.type === 'approval.superseded').length, 2);
  t.is(ep.timeline.filter((e: any) => e.type === 'governance.approval_superseded').length, 2);

  // The approver hears that each old request no longer stands.
  const withdrawn = (await ta.app.db('notify_outbox').select('channel', 'episode').where({ event: 'incident.approval_superseded' })) as any[];
  t.deepEqual(
    withdrawn.map((w) => w.channel),
    ['approver@bank.example', 'approver@bank.example'],
  );
  t.regex(JSON.parse(withdrawn[0].episode).report, /^Approval no longer needed: restart on jobs/);

  const stale = await ta.call('POST', `/v1/approvals/${first!.id}/approve`, { token: approver, body: {} });
  t.is(stale.status, 409);
  t.is(stale.body.error, 'approval_closed');
  await ta.app.acting.acting.run();
  t.deepEqual(acted(log), [], 'a superseded request runs nothing');

  t.is((await ta.call('POST', `/v1/approvals/${pending[0]!.id}/approve`, { token: approver, body: {} })).status, 200);
  await ta.app.acting.acting.run();
  t.is(acted(log).length, 1, 'the current request runs its action once');
  t.true((await ta.app.verifyLedger()).ok);
});

test('an approval racing the new run: either it is approved and its action runs, or it answers 409 and the new run asks again; never approved and idle', async (t) => {
  for (let round = 0; round < 4; round++) {
    const { ta, log, approver } = await setup(t);
    await push(t, ta, 'WorkerStuck');
    const [first] = await requests(ta, 'pending');
    t.is(
      (await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: `Other${round}`, service: 'jobs', severity: 'critical' } })).status,
      202,
    );
    ta.clock.advance(20 * SECOND);
    await ta.app.episodes.process();
    const [approval] = await Promise.all([
      ta.call('POST', `/v1/approvals/${first!.id}/approve`, { token: approver, body: {} }),
      ta.app.investigation.investigations.run(),
    ]);
    await ta.app.acting.acting.run();
    await ta.app.acting.acting.run();
    const all = await requests(ta);
    if (approval.status === 200) {
      t.is(approval.body.approval.state, 'approved');
      t.is(acted(log).length, 1, 'an approved request is carried out');
      t.is(all.filter((r) => r.state === 'pending').length, 0);
    } else {
      t.is(approval.status, 409);
      t.is(approval.body.error, 'approval_closed');
      t.deepEqual(acted(log), []);
      t.is(all.filter((r) => r.state === 'pending').length, 1, 'the new run asks again');
    }
    t.true((await ta.app.verifyLedger()).ok);
  }
});
