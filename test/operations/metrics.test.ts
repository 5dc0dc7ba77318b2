// GET /metrics (issue 24): Prometheus's text format behind SERVICE_METRICS_TOKEN (unset: off),
// label values from closed sets, no secret in it; every listed family fed by its area.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { MINUTE, SECOND } from '../../host/clock.ts';
import { AutonomyRepo } from '../../host/governance/autonomy.repo.ts';
import { ADMIN_TOKEN, INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { acted, fixVendor } from '../helpers/fix-vendor.ts';
import { signedIn } from '../helpers/people.ts';

const METRICS_TOKEN = 'metrics-token-for-tests-0123456789abcdef';
const BEARER_SECRET = 'connector-bearer-secret-0123456789';

const scrape = async (ta: TestApp, token: string | null = METRICS_TOKEN) => ta.call('GET', '/metrics', { token });
/** The value of one series (`name{labels}` exactly as printed), or null when absent. */
function value(text: string, series: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? null : Number(line.slice(series.length + 1));
}

test('GET /metrics is off (404, as if it did not exist) while SERVICE_METRICS_TOKEN is unset, whatever the token', async (t) => {
  const ta = await startApp(t, { manualTick: true });
  t.deepEqual((await scrape(ta, ADMIN_TOKEN)).body, { error: 'not_found' });
  t.is((await scrape(ta, null)).status, 404);
});

test('with SERVICE_METRICS_TOKEN set: 401 without a token or with a wrong one, 200 with the metrics token or the admin token; the metrics token opens nothing else', async (t) => {
  const ta = await startApp(t, { manualTick: true, env: { SERVICE_METRICS_TOKEN: METRICS_TOKEN } });
  t.deepEqual((await scrape(ta, null)).body, { error: 'unauthorized' });
  t.is((await scrape(ta, 'x'.repeat(40))).status, 401);
  t.is((await scrape(ta, INGEST_TOKEN)).status, 401, 'the ingest token is not a reader');
  const ok = await scrape(ta);
  t.is(ok.status, 200);
  t.is(ok.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  t.regex(ok.body, /^oncall_build_info\{version="[^"]+",node_version="v\d+[^"]*"\} 1$/m);
  t.regex(ok.body, /^process_resident_memory_bytes \d+/m, "Node's process metrics");
  t.is((await scrape(ta, ADMIN_TOKEN)).status, 200);
  t.is((await ta.call('GET', '/v1/ledger', { token: METRICS_TOKEN })).status, 401);
  t.is((await ta.call('GET', '/v1/status', { token: METRICS_TOKEN })).status, 200, 'open to anyone anyway');
});

test('requests are counted by route template and status, never by the path asked for; unknown source words are generic', async (t) => {
  const ta = await startApp(t, { manualTick: true, env: { SERVICE_METRICS_TOKEN: METRICS_TOKEN } });
  await makeOperating(ta);
  t.is((await ta.call('GET', '/v1/episodes/raw-episode-id-4711')).status, 404);
  t.is((await ta.call('GET', '/no/such/path-4712', { token: null })).status, 404);
  t.is(
    (await ta.call('POST', '/v1/alerts/oddword4713', { token: INGEST_TOKEN, body: { name: 'OddAlert4714', service: 'pay', status: 'firing' } })).status,
    202,
  );
  t.is((await ta.call('POST', '/v1/alerts/grafana', { token: INGEST_TOKEN, body: '{"not":"an alert"}' })).status, 400);
  const text = (await scrape(ta)).body as string;
  t.is(value(text, 'oncall_http_requests_total{method="GET",route="/v1/episodes/:id",status="404"}'), 1);
  t.is(value(text, 'oncall_http_requests_total{method="GET",route="unmatched",status="404"}'), 1);
  t.is(value(text, 'oncall_http_requests_total{method="POST",route="/v1/alerts/:source",status="202"}'), 1);
  t.is(value(text, 'oncall_http_request_duration_seconds_count{method="POST",route="/v1/alerts/:source"}'), 2);
  t.is(value(text, 'oncall_alerts_received_total{source="generic",via="push",result="fired"}'), 1);
  t.is(value(text, 'oncall_alerts_received_total{source="grafana",via="push",result="rejected"}'), 1);
  // In the labels only: a sample's value (a byte count, a duration) may hold the same digits.
  const labels = (text.match(/\{[^}]*\}/g) ?? []).join('\n');
  for (const raw of ['4711', '4712', '4713', '4714']) t.false(labels.includes(raw), `${raw} is not a label value`);
});

test('a scrape follows an incident: alerts, the held set, episodes by tier, investigations, approvals, the action by kind and result, notifications, the ledger, connectors, leases; and no secret', async (t) => {
  const v = fixVendor(t, { logKey: true });
  const ta = await startApp(t, { manualTick: true, env: { SERVICE_METRICS_TOKEN: METRICS_TOKEN, SERVICE_PLUGINS_DIR: v.dir } });
  await makeOperating(ta);
  const approver = await signedIn(ta, 'approver@bank.example', 'viewer');
  t.is((await ta.call('PUT', '/v1/connectors/fix', { body: { kind: 'fixer', settings: { log: v.log } } })).status, 201);
  t.is(
    (await ta.call('PUT', '/v1/connectors/web', { body: { kind: 'http', settings: { base_url: 'http://127.0.0.1:9', bearer_token: BEARER_SECRET } } })).status,
    201,
  );
  const put = await ta.call('PUT', '/v1/estate/overrides', {
    body: {
      services: {
        jobs: {
          owner: 'owner@bank.example',
          approvers: ['approver@bank.example'],
          tier: 2,
          links: [{ kind: 'workload', match: 'job="jobs"', connector: 'fix' }],
        },
      },
    },
  });
  t.is(put.status, 200, JSON.stringify(put.body));
  await ta.app.ledger.transact(async (trx) =>
    new AutonomyRepo(ta.app.db).set(trx, { service: 'jobs', level: 'L1', changed_at: ta.clock.now().toISOString(), changed_by: 'test', source: 'api' }),
  );

  let text = (await scrape(ta)).body as string;
  t.is(value(text, 'oncall_ledger_verify_ok'), null, 'no verify has run yet');
  t.is(value(text, 'oncall_held_alerts'), 0);

  const alert = { name: 'WorkerStuck', service: 'jobs', severity: 'critical', status: 'firing', id: 'jobs-stuck' };
  t.is((await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: alert })).status, 202);
  t.is((await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: alert })).status, 202);
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  text = (await scrape(ta)).body as string;
  t.is(value(text, 'oncall_alerts_received_total{source="generic",via="push",result="fired"}'), 1);
  t.is(value(text, 'oncall_alerts_received_total{source="generic",via="push",result="refreshed"}'), 1);
  t.is(value(text, 'oncall_held_alerts'), 1);
  t.is(value(text, 'oncall_episodes_open{tier="2"}'), 1);
  t.is(value(text, 'oncall_investigations_pending'), 1);

  await ta.app.investigation.investigations.run();
  await ta.app.acting.acting.run();
  text = (await scrape(ta)).body as string;
  t.is(value(text, 'oncall_investigations_pending'), 0);
  t.is(value(text, 'oncall_investigations_running'), 0);
  t.is(value(text, 'oncall_investigation_duration_seconds_count'), 1);
  t.is(value(text, 'oncall_approvals_pending'), 1);
  t.true((value(text, 'oncall_notification_queue_depth') ?? 0) >= 1, 'the approver is to be told');

  const requestId = (await ta.call('GET', '/v1/approvals')).body.approvals.find((a: any) => a.state === 'pending').id;
  t.is((await ta.call('POST', `/v1/approvals/${requestId}/approve`, { token: approver, body: {} })).status, 200);
  await ta.app.acting.acting.run();
  t.is(acted(v.log).length, 1);
  t.true((await ta.app.verifyLedger()).ok);
  // Past the first round of connector checks (5 minutes after start) and a checkpoint's 60 s.
  ta.clock.advance(5 * MINUTE + SECOND);
  await ta.app.tick();
  // What the tick set going in the background, finished, so that the ledger stands still.
  await ta.app.connectorChecks.idle();
  await ta.app.investigation.investigations.run();
  await ta.app.acting.acting.run();
  await ta.app.notifications.run();
  const status = (await ta.call('GET', '/v1/status')).body;

  text = (await scrape(ta)).body as string;
  t.is(value(text, 'oncall_approvals_pending'), 0);
  t.is(value(text, 'oncall_actions_total{kind="restart",result="executed"}'), 1);
  t.true((value(text, 'oncall_notifications_total{channel="email",result="attempt_failed"}') ?? 0) >= 1, 'no mail is configured: the attempts fail');
  t.is(value(text, 'oncall_ledger_head_seq'), status.ledger_head.seq);
  t.is(value(text, 'oncall_ledger_checkpoint_seq'), status.ledger_checkpoint.seq);
  t.is(value(text, 'oncall_ledger_checkpoint_age_seconds'), 0);
  t.is(value(text, 'oncall_ledger_verify_ok'), 1);
  t.is(value(text, 'oncall_connectors{kind="fixer",state="ok"}'), 1);
  t.is(value(text, 'oncall_connectors{kind="http",state="problem"}'), 1);
  t.is(value(text, 'oncall_leases_held{lease="connectors"}'), 1);
  t.is(value(text, 'oncall_ready'), 1);

  for (const secret of [ADMIN_TOKEN, INGEST_TOKEN, METRICS_TOKEN, BEARER_SECRET, readFileSync(path.join(ta.store.dataDir, 'secret.key'), 'utf8').trim()])
    t.false(text.includes(secret));
  for (const name of ['WorkerStuck', 'jobs-stuck', 'approver@bank.example', 'owner@bank.example']) t.false(text.includes(name), `${name} is not a label value`);
});

test('a figure that cannot be read is left out of the scrape and counted; the rest still answers', async (t) => {
  const ta = await startApp(t, { manualTick: true, env: { SERVICE_METRICS_TOKEN: METRICS_TOKEN } });
  await ta.app.db.schema.dropTable('approval_requests');
  const res = await scrape(ta);
  t.is(res.status, 200);
  t.is(value(res.body, 'oncall_approvals_pending'), null);
  t.is(value(res.body, 'oncall_metrics_read_failures_total{metric="oncall_approvals_pending"}'), 1, 'counted in the same scrape');
  t.is(value(res.body, 'oncall_ready'), 1);
});

test('a running study shows as the study lease this host holds, and is gone once it ends', async (t) => {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const ta = await startApp(t, { manualTick: true, env: { SERVICE_METRICS_TOKEN: METRICS_TOKEN }, studyWait: () => gate });
  await makeOperating(ta);
  t.is((await ta.call('PUT', '/v1/estate/overrides', { body: { services: { a: { tier: 2 } } } })).status, 200);
  t.is((await ta.call('POST', '/v1/study', { body: { minutes: 5 } })).status, 202);
  t.is(value((await scrape(ta)).body, 'oncall_leases_held{lease="study"}'), 1);
  open();
  await ta.app.study.study.idle();
  t.is(value((await scrape(ta)).body, 'oncall_leases_held{lease="study"}'), 0);
});
