// Heartbeats of the alerting pipeline (issue 21, class 10): a dead-man's-switch alert (Watchdog)
// never opens an incident by itself; when it stops arriving (past its timeout, or resolved by its
// tool) the service raises HeartbeatMissing, an incident opens, and it clears when the heartbeat
// is back. Timeouts are configured per source, or learned from the arrivals; all on the clock.
import test from 'ava';
import { SECOND } from '../../host/clock.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';

const watchdog = (status: 'firing' | 'resolved' = 'firing', name = 'Watchdog') => ({
  version: '4',
  status,
  receiver: 'oncall',
  groupKey: '{}:{alertname="Watchdog"}',
  alerts: [
    {
      status,
      labels: { alertname: name, severity: 'none', prometheus: 'monitoring/k8s' },
      annotations: { summary: 'An alert that should always be firing to certify that Alertmanager is working properly.' },
      startsAt: '2026-06-01T00:00:00Z',
      endsAt: status === 'resolved' ? '2026-06-01T01:00:00Z' : '0001-01-01T00:00:00Z',
      generatorURL: 'http://prometheus:9090/graph?g0.expr=vector%281%29',
      fingerprint: `wd-${name}`,
    },
  ],
});

async function started(t: Parameters<typeof startApp>[0]): Promise<TestApp> {
  const ta = await startApp(t, { manualTick: true });
  await makeOperating(ta);
  return ta;
}

const send = async (ta: TestApp, body: unknown) => {
  const r = await ta.call('POST', '/v1/alerts/alertmanager', { token: INGEST_TOKEN, body });
  if (r.status !== 202) throw new Error(JSON.stringify(r.body));
  return r.body;
};

const episodes = async (ta: TestApp) => (await ta.call('GET', '/v1/episodes')).body.episodes as any[];
const events = async (ta: TestApp, type: string) => (await ta.call('GET', `/v1/ledger?type=${type}`)).body.events as any[];

test('a Watchdog is a heartbeat: it is taken in but never held as an alert nor opens an episode', async (t) => {
  const ta = await started(t);
  const r = await send(ta, watchdog());
  t.is(r.accepted, 1);
  ta.clock.advance(60 * SECOND);
  await ta.app.tick();
  t.deepEqual(await episodes(ta), []);
  const view = (await ta.call('GET', '/v1/settings/heartbeats')).body;
  t.like(view.heartbeats[0], { source: 'alertmanager', name: 'Watchdog', state: 'alive', timeout_s: null });
  t.like((await events(ta, 'signal.pushed'))[0].data, { heartbeats: 1, fired: 0 });
});

test('a heartbeat past its configured timeout raises HeartbeatMissing, an incident opens, and it closes when the heartbeat is back', async (t) => {
  const ta = await started(t);
  const put = await ta.call('PUT', '/v1/settings/heartbeats', { body: { sources: { alertmanager: { timeout_s: 60 } } } });
  t.is(put.status, 200, JSON.stringify(put.body));
  await send(ta, watchdog());
  ta.clock.advance(59 * SECOND);
  await ta.app.tick();
  t.is((await events(ta, 'signal.heartbeat_missing')).length, 0, 'not missing before its timeout');
  ta.clock.advance(2 * SECOND);
  await ta.app.tick();
  const missing = await events(ta, 'signal.heartbeat_missing');
  t.is(missing.length, 1);
  t.like(missing[0].data, { source: 'alertmanager', heartbeat: 'Watchdog' });
  t.is((await events(ta, 'signal.raised')).length, 1);
  ta.clock.advance(21 * SECOND);
  await ta.app.tick();
  const [ep] = await episodes(ta);
  t.like(ep, { service: 'alerting-pipeline', state: 'open', alerts: ['HeartbeatMissing'] });
  // Still missing on the next ticks: raised once.
  await ta.app.tick();
  t.is((await events(ta, 'signal.heartbeat_missing')).length, 1);

  await send(ta, watchdog());
  t.is((await events(ta, 'signal.heartbeat_back')).length, 1);
  await ta.app.tick();
  const [closed] = await episodes(ta);
  t.like(closed, { id: ep.id, state: 'closed' });
});

test('a Watchdog its tool resolves is missing at once', async (t) => {
  const ta = await started(t);
  await send(ta, watchdog());
  await send(ta, watchdog('resolved'));
  const missing = await events(ta, 'signal.heartbeat_missing');
  t.is(missing.length, 1);
  t.regex(missing[0].reason, /was resolved by its tool/);
  ta.clock.advance(21 * SECOND);
  await ta.app.tick();
  t.like((await episodes(ta))[0], { service: 'alerting-pipeline', alerts: ['HeartbeatMissing'] });
});

test('without a configured timeout it is learned: 3 × the interval between arrivals, at least 5 minutes', async (t) => {
  const ta = await started(t);
  await send(ta, watchdog());
  ta.clock.advance(2 * 60 * SECOND);
  await send(ta, watchdog());
  // Interval 120 s: timeout max(300 s, 360 s) = 360 s.
  ta.clock.advance(359 * SECOND);
  await ta.app.tick();
  t.is((await events(ta, 'signal.heartbeat_missing')).length, 0);
  ta.clock.advance(2 * SECOND);
  await ta.app.tick();
  t.is((await events(ta, 'signal.heartbeat_missing')).length, 1);
  t.like((await ta.call('GET', '/v1/settings/heartbeats')).body.heartbeats[0], { interval_s: 120, timeout_s: 360, state: 'missing' });
});

test('a source whose settings name no heartbeat takes its Watchdog as an ordinary alert; bad settings answer 400', async (t) => {
  const ta = await started(t);
  t.is((await ta.call('PUT', '/v1/settings/heartbeats', { body: { sources: { alertmanager: { alerts: [] } } } })).status, 200);
  await send(ta, watchdog());
  ta.clock.advance(21 * SECOND);
  await ta.app.tick();
  t.like((await episodes(ta))[0], { alerts: ['Watchdog'] });
  for (const body of [{ sources: { alertmanager: { timeout_s: 5 } } }, { sources: { 'Bad Source': {} } }, { sources: { x: { alerts: 'Watchdog' } } }, {}]) {
    const r = await ta.call('PUT', '/v1/settings/heartbeats', { body });
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.body.error, 'invalid_body');
  }
  const viewer = await ta.call('PUT', '/v1/settings/heartbeats', { token: INGEST_TOKEN, body: { sources: {} } });
  t.is(viewer.status, 401);
});

test('checks racing (two hosts on MariaDB, two passes of one host on SQLite) raise a missing heartbeat once', async (t) => {
  const first = await started(t);
  // SQLite has one writer, so one host: two of its passes race instead.
  const second = first.store.databaseUrl === null ? first : await startApp(t, { store: first.store, clock: first.clock, manualTick: true });
  await first.call('PUT', '/v1/settings/heartbeats', { body: { sources: { alertmanager: { timeout_s: 60 } } } });
  await send(first, watchdog());
  first.clock.advance(61 * SECOND);
  const raised = await Promise.all([first.app.intake.checkHeartbeats(), second.app.intake.checkHeartbeats()]);
  t.is(raised[0] + raised[1], 1);
  t.is((await events(first, 'signal.heartbeat_missing')).length, 1);
  t.is((await events(first, 'signal.raised')).length, 1);
});
