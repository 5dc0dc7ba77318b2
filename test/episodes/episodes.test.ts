import test from 'ava';
import { DAY, HOUR, SECOND } from '../../host/clock.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';

interface Alert {
  name: string;
  service?: string | null;
  severity?: string;
  status?: string;
  id?: string;
  labels?: Record<string, string>;
  summary?: string;
}

const push = (ta: TestApp, ...alerts: Alert[]) => ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { alerts } });
const fire = (name: string, service: string | null, more: Partial<Alert> = {}): Alert => ({
  name,
  service,
  severity: 'critical',
  status: 'firing',
  id: `${service}-${name}`,
  summary: `${name} on ${service}`,
  ...more,
});
const resolve = (a: Alert): Alert => ({ ...a, status: 'resolved' });
const episodes = async (ta: TestApp, query = '') => (await ta.call('GET', `/v1/episodes${query}`)).body.episodes as any[];
const events = async (ta: TestApp, type: string) => (await ta.call('GET', `/v1/ledger?type=${type}&order=asc`)).body.events as any[];

async function operating(t: Parameters<typeof startApp>[0], opts: Parameters<typeof startApp>[1] = {}): Promise<TestApp> {
  const ta = await startApp(t, opts);
  await makeOperating(ta);
  return ta;
}

/** Moves the injected clock and runs what time triggers (release, grouping, closing). */
async function after(ta: TestApp, ms: number): Promise<void> {
  ta.clock.advance(ms);
  await ta.app.tick();
}

test('a firing alert opens an episode only once the 20 s debounce has passed; with nobody to tell its outcome stays empty and says so', async (t) => {
  const ta = await operating(t);
  const a = fire('HighErrorRate', 'checkout');
  t.is((await push(ta, a)).status, 202);
  await ta.app.episodes.process();
  await after(ta, 19 * SECOND);
  t.deepEqual(await episodes(ta), [], 'nothing opens inside the debounce window');
  await after(ta, SECOND);
  const [ep, ...rest] = await episodes(ta);
  t.is(rest.length, 0);
  t.like(ep, {
    service: 'checkout',
    alerts: ['HighErrorRate'],
    kind: 'incident',
    state: 'open',
    decision: 'abstain',
    outcome: '',
    t_close: null,
    note: 'HighErrorRate on checkout',
  });
  t.like(ep.outcome_detail, { value: null, reason: 'nobody to tell: no on-call recipients or targets are set', told: [] });
  t.is(ep.t_open, ta.clock.now().toISOString());
  const decided = await events(ta, 'episode.decided');
  t.is(decided.length, 1);
  t.is(decided[0].trace, ep.id);
  t.regex(decided[0].reason, /escalated to people now, before any action: the investigation.*nobody to tell/);
  t.like(decided[0].data, { decision: 'abstain', outcome: null, to: [] });
  t.true((await ta.app.verifyLedger()).ok);
});

test('alerts of one service group into one episode; another service gets its own', async (t) => {
  const ta = await operating(t);
  await push(ta, fire('HighErrorRate', 'checkout'), fire('SlowRequests', 'checkout', { severity: 'warning' }), fire('DiskFull', 'ledger-db'));
  await after(ta, 20 * SECOND);
  const list = await episodes(ta);
  t.is(list.length, 2);
  const byService = Object.fromEntries(list.map((e) => [e.service, e]));
  t.deepEqual(byService.checkout.alerts.sort(), ['HighErrorRate', 'SlowRequests']);
  t.deepEqual(byService['ledger-db'].alerts, ['DiskFull']);
});

test('an alert of a service with an open episode joins it at once (correlation), and a re-send opens nothing new', async (t) => {
  const ta = await operating(t);
  const first = fire('HighErrorRate', 'checkout');
  await push(ta, first);
  await after(ta, 20 * SECOND);
  const [ep] = await episodes(ta);
  await after(ta, 5 * 60 * SECOND);
  await push(ta, fire('SlowRequests', 'checkout'), first);
  await ta.app.episodes.process();
  const list = await episodes(ta);
  t.is(list.length, 1, 'no second episode');
  t.is(list[0].id, ep.id);
  t.deepEqual(list[0].alerts, ['HighErrorRate', 'SlowRequests']);
  const joined = await events(ta, 'episode.alerts_joined');
  t.is(joined.length, 1);
  t.like(joined[0], { trace: ep.id, data: { count: 1, alerts: ['SlowRequests'] } });
});

test('an alert resolved inside the debounce window opens no episode', async (t) => {
  const ta = await operating(t);
  const a = fire('Blip', 'checkout');
  await push(ta, a);
  await after(ta, 10 * SECOND);
  await push(ta, resolve(a));
  await after(ta, 30 * SECOND);
  t.deepEqual(await episodes(ta), []);
});

test('the episode closes when all its alerts are resolved or released, with t_close and duration', async (t) => {
  const ta = await operating(t);
  const a = fire('HighErrorRate', 'checkout');
  const b = fire('SlowRequests', 'checkout');
  await push(ta, a, b);
  await after(ta, 20 * SECOND);
  await after(ta, 10 * 60 * SECOND);
  await push(ta, resolve(a));
  await ta.app.episodes.process();
  t.is((await episodes(ta))[0].state, 'open', 'one alert still fires');
  await after(ta, 4 * HOUR);
  const [ep] = await episodes(ta);
  t.like(ep, { state: 'closed', t_close: ta.clock.now().toISOString() });
  t.is(ep.duration_s, 10 * 60 + 4 * 3600);
  const closed = await events(ta, 'episode.closed');
  t.like(closed[0], { trace: ep.id, data: { resolved: 1, released: 1 } });
  const full = (await ta.call('GET', `/v1/episodes/${ep.id}`)).body;
  t.deepEqual(
    full.signals.map((s: any) => [s.name, s.status]),
    [
      ['HighErrorRate', 'resolved'],
      ['SlowRequests', 'released'],
    ],
  );
});

test('after an episode closes, the same alert firing again opens a new one after a new debounce', async (t) => {
  const ta = await operating(t);
  const a = fire('HighErrorRate', 'checkout');
  await push(ta, a);
  await after(ta, 20 * SECOND);
  await push(ta, resolve(a));
  await after(ta, SECOND);
  await push(ta, a);
  await after(ta, 10 * SECOND);
  t.is((await episodes(ta)).length, 1);
  await after(ta, 10 * SECOND);
  const list = await episodes(ta);
  t.is(list.length, 2);
  t.deepEqual(
    list.map((e) => e.state),
    ['open', 'closed'],
    'newest first',
  );
});

test('an alert that fires again while its episode is still open rejoins the same episode', async (t) => {
  const ta = await operating(t);
  const a = fire('HighErrorRate', 'checkout');
  const b = fire('SlowRequests', 'checkout');
  await push(ta, a, b);
  await after(ta, 20 * SECOND);
  await push(ta, resolve(a));
  await push(ta, a);
  await ta.app.episodes.process();
  const list = await episodes(ta);
  t.is(list.length, 1);
  const full = (await ta.call('GET', `/v1/episodes/${list[0].id}`)).body;
  t.deepEqual(
    full.signals.map((s: any) => s.status),
    ['firing', 'firing'],
  );
});

test('a restart in the middle of the debounce window loses and duplicates nothing', async (t) => {
  const first = await operating(t, { keepStore: true });
  t.teardown(() => first.store.cleanup());
  await push(first, fire('HighErrorRate', 'checkout'));
  await first.app.episodes.process();
  first.clock.advance(15 * SECOND);
  await first.app.close();
  const second = await startApp(t, { store: first.store, clock: first.clock });
  await after(second, 4 * SECOND);
  t.deepEqual(await episodes(second), []);
  await after(second, SECOND);
  t.is((await episodes(second)).length, 1);
  await after(second, 60 * SECOND);
  t.is((await episodes(second)).length, 1, 'opened once');
  t.is((await events(second, 'episode.opened')).length, 1);
});

test('SERVICE_DEBOUNCE_S sets the window', async (t) => {
  const ta = await operating(t, { env: { SERVICE_DEBOUNCE_S: '5' } });
  await push(ta, fire('HighErrorRate', 'checkout'));
  await after(ta, 5 * SECOND);
  t.is((await episodes(ta)).length, 1);
});

test('alerts without a service group under "unknown"; info-only episodes are notices, left out by group=incident', async (t) => {
  const ta = await operating(t);
  await push(ta, fire('Heartbeat', null, { severity: 'info' }), fire('CertExpiresSoon', 'edge', { severity: 'info' }), fire('Down', 'api'));
  await after(ta, 20 * SECOND);
  const all = await episodes(ta);
  t.deepEqual(all.map((e) => e.service).sort(), ['api', 'edge', 'unknown']);
  t.deepEqual(Object.fromEntries(all.map((e) => [e.service, e.kind])), { api: 'incident', edge: 'notice', unknown: 'notice' });
  t.deepEqual(
    (await episodes(ta, '?group=incident')).map((e) => e.service),
    ['api'],
  );
  t.is((await ta.call('GET', '/v1/episodes?group=noise')).status, 400);
});

test('a notice becomes an incident when a warning joins it', async (t) => {
  const ta = await operating(t);
  await push(ta, fire('CertExpiresSoon', 'edge', { severity: 'info' }));
  await after(ta, 20 * SECOND);
  await push(ta, fire('TLSHandshakeErrors', 'edge', { severity: 'warning' }));
  await ta.app.episodes.process();
  t.is((await episodes(ta))[0].kind, 'incident');
});

test('the list and the episode carry the worst severity of its alerts', async (t) => {
  const ta = await operating(t);
  await push(
    ta,
    fire('CertExpiresSoon', 'edge', { severity: 'info' }),
    fire('Slow', 'api', { severity: 'warning' }),
    fire('Heartbeat', 'db', { severity: 'info' }),
  );
  await after(ta, 20 * SECOND);
  t.deepEqual(Object.fromEntries((await episodes(ta)).map((e) => [e.service, e.severity])), { edge: 'info', api: 'warning', db: 'info' });
  await push(ta, fire('TLSHandshakeErrors', 'edge', { severity: 'warning' }), fire('Down', 'api', { severity: 'critical' }));
  await ta.app.episodes.process();
  const list = await episodes(ta);
  t.deepEqual(Object.fromEntries(list.map((e) => [e.service, e.severity])), { edge: 'warning', api: 'critical', db: 'info' });
  const api = list.find((e) => e.service === 'api');
  t.is((await ta.call('GET', `/v1/episodes/${api.id}`)).body.severity, 'critical');
});

test('the baseline counts firings in 7 and 30 days and marks flapping', async (t) => {
  const ta = await operating(t);
  const a = fire('Flappy', 'checkout');
  // Three firings within an hour, all resolved inside the debounce window: no episode, but history.
  for (let i = 0; i < 3; i++) {
    await push(ta, a);
    await after(ta, 5 * SECOND);
    await push(ta, resolve(a));
    await after(ta, 10 * 60 * SECOND);
  }
  await push(ta, a);
  await after(ta, 20 * SECOND);
  const [ep] = await episodes(ta);
  const full = (await ta.call('GET', `/v1/episodes/${ep.id}`)).body;
  t.like(full.signals[0].baseline, { firings_7d: 4, firings_30d: 4, flapping: true });
  await push(ta, resolve(a));
  await after(ta, 8 * DAY);
  await push(ta, a);
  await after(ta, 20 * SECOND);
  const [next] = await episodes(ta);
  const nextFull = (await ta.call('GET', `/v1/episodes/${next.id}`)).body;
  t.like(nextFull.signals[0].baseline, { firings_7d: 1, firings_30d: 5, flapping: false });
  t.is(nextFull.signals[0].baseline.first_seen < nextFull.signals[0].baseline.last_seen, true);
});

test('GET /v1/episodes/{id} carries signals, data, the decision and the whole timeline from the ledger', async (t) => {
  const ta = await operating(t);
  await push(ta, fire('HighErrorRate', 'checkout', { labels: { env: 'prod', region: 'eu-west-1' } }));
  await after(ta, 20 * SECOND);
  const [ep] = await episodes(ta);
  const res = await ta.call('GET', `/v1/episodes/${ep.id}`);
  t.is(res.status, 200);
  const full = res.body;
  t.like(full, {
    id: ep.id,
    service: 'checkout',
    decision: 'abstain',
    outcome: '',
    proposal: null,
    rehearsal: null,
    approvals: [],
  });
  t.like(full.outcome_detail, { value: null, told: [] });
  t.like(full.policy_decision, { decision: 'abstain' });
  t.like(full.signals[0], { name: 'HighErrorRate', severity: 'critical', status: 'firing', fingerprint: 'checkout-HighErrorRate' });
  t.deepEqual(full.data.env, ['prod']);
  t.deepEqual(full.data.siem, ['generic']);
  t.deepEqual(
    full.timeline.map((e: any) => e.type).filter((type: string) => type.startsWith('episode.')),
    ['episode.opened', 'episode.decided'],
  );
  t.true(full.timeline.every((e: any) => e.trace === ep.id));
  t.is((await ta.call('GET', '/v1/episodes/no-such-episode')).status, 404);
});

test('the list pages newest first with a cursor', async (t) => {
  const ta = await operating(t);
  for (let i = 0; i < 5; i++) {
    await push(ta, fire('Down', `svc-${i}`));
    await after(ta, 20 * SECOND);
  }
  const page1 = (await ta.call('GET', '/v1/episodes?limit=2')).body;
  t.deepEqual(
    page1.episodes.map((e: any) => e.service),
    ['svc-4', 'svc-3'],
  );
  t.true(page1.more);
  const page2 = (await ta.call('GET', `/v1/episodes?limit=2&cursor=${page1.cursor}`)).body;
  t.deepEqual(
    page2.episodes.map((e: any) => e.service),
    ['svc-2', 'svc-1'],
  );
  const page3 = (await ta.call('GET', `/v1/episodes?limit=2&cursor=${page2.cursor}`)).body;
  t.deepEqual(
    page3.episodes.map((e: any) => e.service),
    ['svc-0'],
  );
  t.false(page3.more);
  t.is(page3.cursor, null);
  const bad = await ta.call('GET', '/v1/episodes?cursor=nonsense');
  t.is(bad.status, 400);
  t.is(bad.body.error, 'bad_cursor');
  t.is((await ta.call('GET', '/v1/episodes?limit=0')).status, 400);
});

test('the list filters with the query language in SQL, and a bad query names its column', async (t) => {
  const ta = await operating(t);
  await push(ta, fire('HighErrorRate', 'checkout'), fire('DiskFull', 'ledger-db'));
  await after(ta, 20 * SECOND);
  t.deepEqual(
    (await episodes(ta, '?query=' + encodeURIComponent('service:check*'))).map((e) => e.service),
    ['checkout'],
  );
  t.deepEqual(
    (await episodes(ta, '?query=' + encodeURIComponent('-alert:DiskFull opened<1h'))).map((e) => e.service),
    ['checkout'],
  );
  const bad = await ta.call('GET', '/v1/episodes?query=' + encodeURIComponent('service:checkout (kind:incident'));
  t.is(bad.status, 400);
  t.is(bad.body.error, 'bad_query');
  t.regex(bad.body.message, /at column \d+/);
});

test('episodes answer 401 without a token and 503 before the service is operating', async (t) => {
  const ta = await startApp(t);
  t.is((await ta.call('GET', '/v1/episodes', { token: null })).status, 401);
  const res = await ta.call('GET', '/v1/episodes');
  t.is(res.status, 503);
  t.is(res.body.error, 'not_operating');
  t.is((await ta.call('GET', '/v1/episodes/x')).status, 503);
});
