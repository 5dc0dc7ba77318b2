// Issue 22, item 2: events a caller records with the ingest token (POST /v1/events) are marked as
// such in the ledger (data.recorded_by, inside the hash), shown as such, never counted as the
// service's own actions, approvals or outcomes, and never recorded under a person's or the
// service's own name. A caller's human.deploy reaches the investigation with its provenance.
import test from 'ava';
import { SECOND } from '../../host/clock.ts';
import { refusedActor } from '../../host/ledger/caller-events.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { signedIn } from '../helpers/people.ts';

const record = (ta: TestApp, body: Record<string, unknown>) => ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body });

test('a caller event is stored with data.recorded_by = ingest-token inside the hash; a caller cannot set recorded_by itself', async (t) => {
  const ta = await startApp(t);
  const r = await record(ta, { type: 'human.deploy', actor: 'release-pipeline', data: { service: 'payments' } });
  t.is(r.status, 201);
  const e = (await ta.call('GET', '/v1/ledger')).body.events[0];
  t.deepEqual(e.data, { service: 'payments', recorded_by: 'ingest-token' });
  // Taking the mark off breaks the chain: it is part of what was hashed.
  t.true((await ta.app.verifyLedger()).ok);
  await ta.app
    .db('ledger_events')
    .where({ seq: e.seq })
    .update({ data: JSON.stringify({ service: 'payments' }) });
  t.false((await ta.app.verifyLedger()).ok);

  const ta2 = await startApp(t);
  const forged = await record(ta2, { type: 'action.executed', actor: 'deploy-bot', data: { recorded_by: null } });
  t.is(forged.status, 400);
  t.is(forged.body.error, 'invalid_body');
  t.is((await ta2.app.ledger.head()).seq, 0, 'nothing written');
});

test("a caller may not record under a person's address or the service's own names; other actors are kept as given", async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta, 'owner@bank.example');
  const before = (await ta.app.ledger.head()).seq;
  const refused = [
    'owner@bank.example',
    'Owner@Bank.Example',
    'someone@elsewhere',
    'system',
    ' System ',
    'SYSTEM',
    'admin-token',
    'Admin_Token',
    'admin token',
    'ingest-token',
    'config-file',
    'licence-check',
    'poller:am',
    'anonymous',
    'sys\u200btem',
    'sys\u0000tem',
    '---',
  ];
  for (const actor of refused) {
    const r = await record(ta, { type: 'approval.decided', actor, data: { state: 'approved' } });
    t.is(r.status, 400, actor);
    t.is(r.body.error, 'reserved_actor', actor);
  }
  t.is((await ta.app.ledger.head()).seq, before, 'nothing refused was written');
  for (const actor of ['release-pipeline', 'jenkins', 'ci:payments', 'Systems Team']) {
    t.is((await record(ta, { type: 'human.action', actor })).status, 201, actor);
    t.is(refusedActor(actor), null);
  }
  t.true((await ta.app.verifyLedger()).ok);
});

test("caller-recorded actions, approvals, outcomes and mode changes on an episode are shown as the caller's and counted nowhere as the service's", async (t) => {
  const ta = await startApp(t, { manualTick: true });
  await makeOperating(ta);
  t.is(
    (await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: 'Down', service: 'payments', severity: 'critical', id: 'p1' } })).status,
    202,
  );
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  const id = (await ta.call('GET', '/v1/episodes')).body.episodes[0].id as string;
  const outcomeBefore = (await ta.call('GET', `/v1/episodes/${id}`)).body.outcome;
  // One action the service ran itself, then what the attacker recorded: seven "actions" and the rest.
  await ta.app.ledger.append({ type: 'action.executed', actor: 'system', reason: 'restart via fix', trace: id, data: { service: 'payments' } });
  for (let i = 0; i < 7; i++) t.is((await record(ta, { type: 'action.executed', actor: 'deploy-bot', trace: id, data: { service: 'payments' } })).status, 201);
  for (const type of ['approval.decided', 'outcome.mitigated', 'system.mode_changed', 'action.refused', 'action.undone'])
    t.is((await record(ta, { type, actor: 'deploy-bot', reason: 'approved and mitigated', trace: id, data: { state: 'approved' } })).status, 201, type);

  ta.clock.advance(SECOND);
  const digest = (await ta.call('GET', '/v1/digest?days=1')).body;
  t.deepEqual(digest.actions, { executed: 1, refused: 0, failed: 0, undone: 0 }, 'only the action the service ran');
  t.like(digest.approvals, { asked: 0, approved: 0 });
  t.is(digest.episodes.by_outcome.mitigated, 0);
  const ep = (await ta.call('GET', `/v1/episodes/${id}`)).body;
  t.is(ep.outcome, outcomeBefore, 'the outcome is the service’s, untouched');
  t.deepEqual(ep.approvals, []);
  const callers = ep.timeline.filter((e: any) => e.data.recorded_by === 'ingest-token');
  t.is(callers.length, 12, 'each caller event is in the timeline, marked as the caller’s');
  t.true(ep.timeline.filter((e: any) => e.data.recorded_by === undefined).every((e: any) => e.actor === 'system'));
  t.deepEqual((await ta.call('GET', '/v1/approvals')).body.approvals ?? [], []);
  t.deepEqual((await ta.call('GET', '/v1/live')).body.approvals, []);
  t.true((await ta.app.verifyLedger()).ok);
});

test("a caller's human.deploy reaches the investigation as evidence recorded by the ingest token", async (t) => {
  const ta = await startApp(t, { manualTick: true });
  await makeOperating(ta);
  await signedIn(ta, 'viewer@bank.example', 'viewer');
  t.is((await record(ta, { type: 'human.deploy', actor: 'release-pipeline', reason: 'v2', data: { service: 'payments' } })).status, 201);
  ta.clock.advance(60 * SECOND);
  t.is(
    (await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: 'Down', service: 'payments', severity: 'critical', id: 'p1' } })).status,
    202,
  );
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  await ta.app.investigation.investigations.run();
  const id = (await ta.call('GET', '/v1/episodes')).body.episodes[0].id as string;
  const ep = (await ta.call('GET', `/v1/episodes/${id}`)).body;
  const change = ep.verdicts.find((v: any) => v.cause === 'core/recent-change');
  t.is(change.verdict, 'holds');
  t.regex(change.reason, /^Deploy by release-pipeline \("v2"\), ledger event \d+ recorded by a caller \(ingest-token\)/);
  const evidence = ep.evidence.find((e: any) => e.kind === 'deploys');
  t.is(evidence.observed.events[0].recorded_by, 'ingest-token');
  const retrieval = ep.timeline.find((e: any) => e.type === 'retrieval.context');
  t.like(retrieval.data.recent_changes, { deploys_and_actions_last_hour: 1, caller_recorded: 1, latest_recorded_by: 'ingest-token' });
});
