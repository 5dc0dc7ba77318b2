import { readFileSync } from 'node:fs';
import test from 'ava';
import { HOUR } from '../../host/clock.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';

const fixture = (p: string) => readFileSync(new URL(`../../plugins/normalisers/${p}`, import.meta.url), 'utf8');
const push = (ta: TestApp, source: string, body: unknown) => ta.call('POST', `/v1/alerts/${source}`, { token: INGEST_TOKEN, body });
const held = async (ta: TestApp) =>
  (await ta.app.db('held_alerts').select('fingerprint', 'status', 'name').orderBy('fingerprint')) as Array<{
    fingerprint: string;
    status: string;
    name: string;
  }>;

async function operating(t: Parameters<typeof startApp>[0], env: Record<string, string> = {}): Promise<TestApp> {
  const ta = await startApp(t, { env });
  await makeOperating(ta);
  return ta;
}

test('a real Alertmanager push answers 202 with the signals, holds them, and records signal.pushed', async (t) => {
  const ta = await operating(t);
  const res = await push(ta, 'alertmanager', fixture('alertmanager/fixtures/zulip-two-alerts-firing.json'));
  t.is(res.status, 202);
  t.is(res.body.accepted, 2);
  t.is(res.body.resolved, 0);
  t.deepEqual(
    res.body.signals.map((s: { fingerprint: string }) => s.fingerprint),
    ['a1bc48475b20e73d', 'c2ea85182f28cbd9'],
  );
  t.deepEqual(await held(ta), [
    { fingerprint: 'a1bc48475b20e73d', status: 'firing', name: 'High CPU Temperature' },
    { fingerprint: 'c2ea85182f28cbd9', status: 'firing', name: 'High CPU Temperature' },
  ]);
  const ev = (await ta.call('GET', '/v1/ledger?type=signal.pushed')).body.events[0];
  t.like(ev, { actor: 'ingest-token:alertmanager', data: { source: 'alertmanager', fired: 2, refreshed: 0, resolved: 0, unknown_resolved: 0 } });
  t.true((await ta.app.verifyLedger()).ok);
});

test('a resolved push with the same fingerprint resolves the held alert; an unknown one is counted, not an error', async (t) => {
  const ta = await operating(t);
  const fire = await push(ta, 'alertmanager', fixture('alertmanager/fixtures/fire-firing-no-fingerprint.json'));
  const resolve = await push(ta, 'alertmanager', fixture('alertmanager/fixtures/fire-resolved-no-fingerprint.json'));
  t.is(resolve.status, 202);
  t.is(resolve.body.resolved, 1);
  t.is(resolve.body.signals[0].fingerprint, fire.body.signals[0].fingerprint);
  t.deepEqual(
    (await held(ta)).map((h) => h.status),
    ['resolved'],
  );
  const unknown = await push(ta, 'alertmanager', fixture('alertmanager/fixtures/k8s-deployment-resolved.json'));
  t.is(unknown.status, 202);
  t.is(unknown.body.resolved, 1);
  const ev = (await ta.call('GET', '/v1/ledger?type=signal.pushed')).body.events[0];
  t.like(ev.data, { resolved: 0, unknown_resolved: 1 });
  t.is((await held(ta)).length, 1, 'an unknown resolve holds nothing');
});

test('re-sending a firing alert refreshes it instead of holding it twice', async (t) => {
  const ta = await operating(t);
  await push(ta, 'alertmanager', fixture('alertmanager/fixtures/probe-failure-firing.json'));
  ta.clock.advance(HOUR);
  await push(ta, 'alertmanager', fixture('alertmanager/fixtures/probe-failure-firing.json'));
  const rows = await ta.app.db('held_alerts').select('*');
  t.is(rows.length, 1);
  t.not(rows[0].first_seen, rows[0].last_seen);
  t.like((await ta.call('GET', '/v1/ledger?type=signal.pushed')).body.events[0].data, { fired: 0, refreshed: 1 });
});

test('a re-send that changed the summary, severity or labels keeps the new content; a plain re-send moves only last_seen', async (t) => {
  // A debounce longer than the clock moves here: no episode takes the alert meanwhile (its
  // episode_id would change, legitimately, whenever the background grouping got to it).
  const ta = await operating(t, { SERVICE_DEBOUNCE_S: '3600' });
  const one = (summary: string, severity: string, extra: Record<string, string>) => ({
    version: '4',
    status: 'firing',
    receiver: 'oncall',
    groupLabels: {},
    commonLabels: {},
    commonAnnotations: {},
    externalURL: 'http://am',
    groupKey: 'k',
    truncatedAlerts: 0,
    alerts: [
      {
        status: 'firing',
        labels: { alertname: 'DiskFull', instance: 'db-1', service: 'pay-api', severity, ...extra },
        annotations: { summary },
        startsAt: '2026-11-22T06:00:00Z',
        endsAt: '0001-01-01T00:00:00Z',
        fingerprint: 'f00dfeed00000001',
      },
    ],
  });
  const row = async () => (await ta.app.db('held_alerts').where({ fingerprint: 'f00dfeed00000001' }).first()) as Record<string, string>;
  t.is((await push(ta, 'alertmanager', one('disk 91% full', 'warning', {}))).status, 202);
  const first = await row();
  ta.clock.advance(60_000);
  t.is((await push(ta, 'alertmanager', one('disk 91% full', 'warning', {}))).status, 202);
  const plain = await row();
  t.not(plain.last_seen, first.last_seen, 'a plain re-send moves last_seen');
  t.deepEqual({ ...plain, last_seen: first.last_seen, seen_hour: first.seen_hour }, first, 'and nothing else');
  ta.clock.advance(60_000);
  t.is((await push(ta, 'alertmanager', one('disk 99% full', 'critical', { team: 'storage' }))).status, 202);
  const changed = await row();
  t.like(changed, { summary: 'disk 99% full', severity: 'critical', status: 'firing', first_seen: first.first_seen, fired_at: first.fired_at });
  t.is(JSON.parse(changed.labels ?? '{}').team, 'storage');
  t.not(changed.last_seen, plain.last_seen);
  t.like((await ta.call('GET', '/v1/ledger?type=signal.pushed')).body.events[0].data, { fired: 0, refreshed: 1 });
});

test('a firing alert not sent again for 4 hours is released by the tick, with a ledger event, and not before', async (t) => {
  const ta = await operating(t);
  await push(ta, 'alertmanager', fixture('alertmanager/fixtures/probe-failure-firing.json'));
  ta.clock.advance(4 * HOUR - 1000);
  await ta.app.tick();
  t.deepEqual(
    (await held(ta)).map((h) => h.status),
    ['firing'],
  );
  ta.clock.advance(2000);
  await ta.app.tick();
  t.deepEqual(
    (await held(ta)).map((h) => h.status),
    ['released'],
  );
  const ev = (await ta.call('GET', '/v1/ledger?type=signal.released')).body.events;
  t.is(ev.length, 1);
  t.like(ev[0].data, { count: 1, fingerprints: ['1a30ba71cca2921f'] });
});

test('the release is exact to the millisecond across hour boundaries, however re-sends moved last_seen', async (t) => {
  const ta = await operating(t);
  const body = fixture('alertmanager/fixtures/probe-failure-firing.json');
  // Last seen half a second before an hour ends: the release is due half a second before the
  // hour four hours later ends, not at the hour's start and not at its end.
  ta.clock.set('2026-11-22T05:20:00.000Z');
  await push(ta, 'alertmanager', body);
  ta.clock.set('2026-11-22T06:59:59.500Z');
  await push(ta, 'alertmanager', body);
  ta.clock.set('2026-11-22T10:59:59.499Z');
  await ta.app.tick();
  t.deepEqual(
    (await held(ta)).map((h) => h.status),
    ['firing'],
    'one millisecond early',
  );
  ta.clock.set('2026-11-22T10:59:59.501Z');
  await ta.app.tick();
  t.deepEqual(
    (await held(ta)).map((h) => h.status),
    ['released'],
    'one millisecond late',
  );
  // Re-fired just after an hour began: four hours on, the hour before it must not release it.
  ta.clock.set('2026-11-22T11:00:00.100Z');
  await push(ta, 'alertmanager', body);
  ta.clock.set('2026-11-22T15:00:00.099Z');
  await ta.app.tick();
  t.deepEqual(
    (await held(ta)).map((h) => h.status),
    ['firing'],
  );
  ta.clock.set('2026-11-22T15:00:00.101Z');
  await ta.app.tick();
  t.deepEqual(
    (await held(ta)).map((h) => h.status),
    ['released'],
  );
  t.true((await ta.app.verifyLedger()).ok);
});

test('the held set survives a restart', async (t) => {
  const first = await startApp(t, { keepStore: true });
  await makeOperating(first);
  await push(first, 'alertmanager', fixture('alertmanager/fixtures/probe-failure-firing.json'));
  await first.app.close();
  const second = await startApp(t, { store: first.store, clock: first.clock });
  t.teardown(() => first.store.cleanup());
  t.deepEqual(
    (await held(second)).map((h) => h.status),
    ['firing'],
  );
  const resolve = await push(second, 'alertmanager', {
    version: '4',
    status: 'resolved',
    alerts: [{ status: 'resolved', labels: { alertname: 'ProbeFailure' }, fingerprint: '1a30ba71cca2921f' }],
  });
  t.is(resolve.status, 202);
  t.deepEqual(
    (await held(second)).map((h) => h.status),
    ['resolved'],
  );
});

test('every real fixture of every tool is taken in through its own path word', async (t) => {
  const ta = await operating(t);
  const cases: Array<[string, string]> = [
    ['datadog', 'datadog/fixtures/custom-metric-monitor-triggered.json'],
    ['splunk', 'splunk/fixtures/enterprise-webhook-doc-example.json'],
    ['pagerduty', 'pagerduty/fixtures/v3-incident-triggered.json'],
    ['azure', 'azure/fixtures/metric-alert-dynamic-fired-sev3.json'],
    ['sentinel', 'azure/fixtures/sentinel-incident-trigger-create-high.json'],
    ['grafana', 'alertmanager/fixtures/grafana-unified-three-alerts-firing.json'],
    ['auto', 'elastic/fixtures/kibana-keep-connector-filled-fired.json'],
    ['nagios', 'generic/fixtures/single-firing.json'],
  ];
  for (const [source, file] of cases) {
    const res = await push(ta, source, fixture(file));
    t.is(res.status, 202, `${source} ${file}: ${JSON.stringify(res.body)}`);
    t.true(res.body.accepted >= 1);
  }
  t.true((await ta.app.verifyLedger()).ok);
});

test('an unreadable body answers 400 unreadable_alert, holds nothing and is recorded only as signal.rejected', async (t) => {
  const ta = await operating(t);
  for (const bad of ['alerts-not-array.json', 'array-of-numbers.json', 'empty-object.json', 'string.json', 'alerts-array-of-non-objects.json']) {
    const res = await push(ta, 'generic', fixture(`generic/fixtures/bad-${bad}`));
    t.is(res.status, 400, bad);
    t.is(res.body.error, 'unreadable_alert', bad);
  }
  t.is((await push(ta, 'auto', '{"alerts": [')).body.error, 'invalid_json');
  const batch = { alerts: [{ name: 'ok one', severity: 'critical', status: 'firing' }, { severity: 'critical' }] };
  t.is((await push(ta, 'generic', batch)).status, 400, 'a batch with one unreadable alert is refused whole');
  t.deepEqual(await held(ta), []);
  const types = (await ta.call('GET', '/v1/ledger?type=signal.&limit=100')).body.events.map((e: { type: string }) => e.type);
  t.deepEqual([...new Set(types)], ['signal.rejected']);
  t.true((await ta.app.verifyLedger()).ok);
});

test('a body over 1 MiB answers 413 and holds nothing', async (t) => {
  const ta = await operating(t);
  const res = await push(ta, 'generic', JSON.stringify({ name: 'x', summary: 'x'.repeat(2 * 1024 * 1024) }));
  t.is(res.status, 413);
  t.deepEqual(await held(ta), []);
});

test('intake answers 403 ingest_disabled without an ingest token, 401 for a wrong token, and 503 before operating', async (t) => {
  const off = await startApp(t, { env: { SERVICE_INGEST_TOKEN: undefined } });
  t.deepEqual((await off.call('POST', '/v1/alerts/generic', { token: 'whatever', body: {} })).body, { error: 'ingest_disabled' });
  const ta = await startApp(t);
  t.is((await ta.call('POST', '/v1/alerts/generic', { token: 'wrong', body: {} })).status, 401);
  t.is((await ta.call('POST', '/v1/alerts/generic', { body: {} })).status, 401, 'the admin token does not open intake');
  const early = await push(ta, 'generic', { name: 'x' });
  t.is(early.status, 503);
  t.deepEqual(early.body, { error: 'not_operating' });
});

test('concurrent pushes of new and repeated alerts all succeed and leave one held row per fingerprint', async (t) => {
  const ta = await operating(t);
  const body = (i: number) => ({
    version: '4',
    status: 'firing',
    alerts: [{ status: 'firing', labels: { alertname: `Load${i % 8}`, instance: `host-${i % 12}` } }],
  });
  const results = await Promise.all(Array.from({ length: 48 }, (_, i) => push(ta, 'alertmanager', body(i))));
  t.deepEqual([...new Set(results.map((r) => r.status))], [202], JSON.stringify(results.find((r) => r.status !== 202)?.body));
  const distinct = new Set(results.map((r) => r.body.signals[0].fingerprint));
  t.is((await held(ta)).length, distinct.size);
  // Pushes that arrive together share one commit, but each keeps its own event.
  const pushed = (await ta.call('GET', '/v1/ledger?type=signal.pushed&limit=100')).body.events;
  t.is(pushed.length, 48);
  t.true((await ta.app.verifyLedger()).ok);
});

test('a push once the licence is past its grace answers 503 at once: being operating is not remembered past the clock', async (t) => {
  const ta = await operating(t);
  t.is((await push(ta, 'generic', { name: 'x' })).status, 202);
  ta.clock.advance(2 * 365 * 24 * HOUR);
  const res = await push(ta, 'generic', { name: 'x' });
  t.is(res.status, 503);
  t.deepEqual(res.body, { error: 'not_operating' });
});
