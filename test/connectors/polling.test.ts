import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { TestClock } from '../../host/clock.ts';
import { Normalisers } from '../../host/intake/normalise.ts';
import { LeaseRepo } from '../../host/schedule/lease.repo.ts';
import { openDb } from '../../host/storage/db.ts';
import { migrate } from '../../host/storage/migrate.ts';
import { ALERTMANAGER_BIN, alertmanagerTest, freePort, startAlertmanager, waitFor, type RunningAlertmanager } from '../helpers/alertmanager.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { createTestStore, ENGINE, MARIADB_URL, withServer, type TestStore } from '../helpers/db.ts';
import { testNeeding } from '../helpers/needs.ts';

/**
 * Polling alert sources: the lease that makes several host processes poll once, and the
 * `alertmanager` connector polled against Debian's real prometheus-alertmanager. The clock the
 * leases and the debounce read is the test's; the scheduler's own heartbeat may fire during a
 * test, so every step changes Alertmanager first and moves the clock after: whichever of the
 * heartbeat and `pollNow()` polls, it sees the same thing, and `pollNow()` waits for it.
 */

// Every test is declared synchronously (ava's rule), so whether MariaDB answers is asked first.
const mariadbMissing = await withServer(MARIADB_URL, (db) => db.raw('select 1')).then(
  () => null,
  (e: Error) => `MariaDB at ${new URL(MARIADB_URL).host} not reachable: ${e.message}`,
);
const amMissing = existsSync(ALERTMANAGER_BIN) ? null : `${ALERTMANAGER_BIN} not found (apt-get install prometheus-alertmanager)`;

const AM_CONFIG = `route:
  receiver: nowhere
  group_wait: 1h
receivers:
  - name: nowhere
`;

type HeldRow = {
  fingerprint: string;
  status: string;
  name: string;
  severity: string;
  service: string | null;
  source: string;
  labels: string;
  summary: string;
  last_seen: string;
  ended_at: string | null;
};

async function postToAm(t: ExecutionContext, am: RunningAlertmanager, alerts: unknown): Promise<void> {
  const res = await fetch(`${am.base}/api/v2/alerts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(alerts) });
  t.is(res.status, 200, `Alertmanager refused the alerts: ${await res.text()}`);
}

async function amAlerts(am: RunningAlertmanager): Promise<Array<Record<string, any>>> {
  return (await (await fetch(`${am.base}/api/v2/alerts?active=true&silenced=false&inhibited=false`)).json()) as Array<Record<string, any>>;
}

const held = async (ta: TestApp) => (await ta.app.db('held_alerts').select('*').orderBy('fingerprint')) as HeldRow[];
const events = async (ta: TestApp, type: string) =>
  (await ta.call('GET', `/v1/ledger?type=${type}&limit=100`)).body.events as Array<{ actor: string; reason: string; data: Record<string, any> }>;

// ---- the lease

async function leaseOn(t: ExecutionContext, store: TestStore) {
  const db = openDb({ databaseUrl: store.databaseUrl, dataDir: store.dataDir });
  t.teardown(async () => {
    await db.destroy();
    await store.cleanup();
  });
  await migrate(db);
  return new LeaseRepo(db);
}

async function leaseRules(t: ExecutionContext, leases: LeaseRepo): Promise<void> {
  t.true(await leases.take('poll:am', 'host-a', 60_000, 1_000), 'a free lease is taken');
  t.false(await leases.take('poll:am', 'host-b', 60_000, 1_000), 'held by another: refused');
  t.false(await leases.take('poll:am', 'host-b', 60_000, 60_999), 'still held 1 ms before it expires');
  t.like(await leases.get('poll:am'), { holder: 'host-a', until_ms: 61_000 });
  t.true(await leases.take('poll:am', 'host-a', 60_000, 30_000), 'the holder extends its own lease');
  t.like(await leases.get('poll:am'), { holder: 'host-a', until_ms: 90_000 });
  t.true(await leases.take('poll:am', 'host-b', 60_000, 90_000), 'an expired lease is taken over');
  t.like(await leases.get('poll:am'), { holder: 'host-b', until_ms: 150_000 });
  t.false(await leases.take('poll:am', 'host-a', 60_000, 100_000));
  t.true(await leases.take('poll:other', 'host-a', 60_000, 100_000), 'leases are per name');
  await leases.release('poll:am', 'host-a');
  t.false(await leases.take('poll:am', 'host-a', 60_000, 100_000), 'only the holder gives a lease back');
  await leases.release('poll:am', 'host-b');
  t.true(await leases.take('poll:am', 'host-a', 60_000, 100_000), 'a lease given back is free at once');

  // Many takers at the same moment: exactly one wins.
  const racers = Array.from({ length: 12 }, (_, i) => `racer-${i}`);
  const won = await Promise.all(racers.map((r) => leases.take('poll:race', r, 60_000, 500_000)));
  t.is(won.filter(Boolean).length, 1, `one winner of ${racers.length}`);
  t.is((await leases.get('poll:race'))!.holder, racers[won.indexOf(true)]!);
  const again = await Promise.all(racers.map((r) => leases.take('poll:race', r, 60_000, 560_000)));
  t.is(again.filter(Boolean).length, 1, 'on expiry, again exactly one');
}

test(`lease: free, held, extended, expired, released, raced (${ENGINE})`, async (t) => {
  await leaseRules(t, await leaseOn(t, await createTestStore()));
});

if (ENGINE === 'sqlite') {
  testNeeding(mariadbMissing, 'lease: the same rules on MariaDB', async (t) => {
    const name = `t_${randomBytes(6).toString('hex')}`;
    await withServer(MARIADB_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
    const url = new URL(MARIADB_URL);
    url.pathname = `/${name}`;
    const dataDir = mkdtempSync(path.join(tmpdir(), 'oncall-lease-'));
    const store: TestStore = {
      dataDir,
      databaseUrl: url.toString(),
      cleanup: async () => {
        await withServer(MARIADB_URL, (db) => db.raw(`drop database if exists \`${name}\``));
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
    await leaseRules(t, await leaseOn(t, store));
  });
}

// ---- the alertmanager connector, polled

alertmanagerTest(
  "an alertmanager connector is checked, polled: held with Alertmanager's own fingerprint, refreshed, grouped, resolved when gone; the ledger verifies",
  async (t) => {
    const ta = await startApp(t);
    await makeOperating(ta);
    const am = await startAlertmanager(t, AM_CONFIG);
    const poller = ta.app.poller;

    const labels = { alertname: 'DiskFull', severity: 'critical', service: 'payments', instance: 'db-1:9100' };
    const annotations = { summary: 'disk /var is 98% full', runbook: 'https://runbooks.example/disk' };
    const startsAt = new Date(Date.now() - 60_000).toISOString();
    await postToAm(t, am, [{ labels, annotations, startsAt }]);

    const put = await ta.call('PUT', '/v1/connectors/am', { body: { kind: 'alertmanager', settings: { url: am.base } } });
    t.is(put.status, 201, JSON.stringify(put.body));
    const check = await ta.call('POST', '/v1/connectors/am/check');
    t.is(check.status, 200);
    t.like(check.body, { name: 'am', kind: 'alertmanager', state: 'ok', last_problem: null, check: { ok: true, problem: null } });
    t.regex(check.body.check.found.version, /^\d+\.\d+/);
    t.is(check.body.check.found.cluster_status, 'disabled');
    const catalogue = (await ta.call('GET', '/v1/connectors/catalogue')).body;
    const kind = (Array.isArray(catalogue) ? catalogue : catalogue.kinds).find((k: { kind: string }) => k.kind === 'alertmanager');
    t.deepEqual(kind.capabilities, ['test', 'poll_alerts']);

    // First poll: the alert is held firing with Alertmanager's own fingerprint.
    await poller.pollNow();
    // GET /v1/live shows the poll and when its next turn is due.
    const polls = (await ta.call('GET', '/v1/live')).body.polls;
    t.like(polls, [
      {
        connector: 'am',
        kind: 'alertmanager',
        every_s: 60,
        polling_here: false,
        last_by: poller.holder,
        next_at: new Date(ta.clock.now().getTime() + 60_000).toISOString(),
      },
    ]);
    const [fromAm] = await amAlerts(am);
    let rows = await held(ta);
    t.is(rows.length, 1);
    t.like(rows[0], {
      fingerprint: fromAm!.fingerprint,
      status: 'firing',
      name: 'DiskFull',
      severity: 'critical',
      service: 'payments',
      source: 'alertmanager',
      summary: 'disk /var is 98% full',
    });
    t.deepEqual(JSON.parse(rows[0]!.labels), { ...labels, siem: 'alertmanager', poller: 'am' });

    // Exactly what the webhook path gives for the same alert (Alertmanager's webhook body).
    const webhook = {
      version: '4',
      groupKey: '{}:{alertname="DiskFull"}',
      status: 'firing',
      receiver: 'oncall',
      externalURL: am.base,
      truncatedAlerts: 0,
      groupLabels: { alertname: 'DiskFull' },
      commonLabels: fromAm!.labels,
      commonAnnotations: fromAm!.annotations,
      alerts: [
        {
          status: 'firing',
          labels: fromAm!.labels,
          annotations: fromAm!.annotations,
          startsAt: fromAm!.startsAt,
          endsAt: '0001-01-01T00:00:00Z',
          generatorURL: fromAm!.generatorURL,
          fingerprint: fromAm!.fingerprint,
        },
      ],
    };
    const [pushed] = new Normalisers(ta.app.plugins.loaded).normalise('alertmanager', webhook);
    const polledLabels = JSON.parse(rows[0]!.labels) as Record<string, string>;
    delete polledLabels.poller;
    t.deepEqual(
      {
        fingerprint: rows[0]!.fingerprint,
        name: rows[0]!.name,
        severity: rows[0]!.severity,
        service: rows[0]!.service,
        summary: rows[0]!.summary,
        labels: polledLabels,
      },
      {
        fingerprint: pushed!.fingerprint,
        name: pushed!.name,
        severity: pushed!.severity,
        service: pushed!.service,
        summary: pushed!.summary,
        labels: pushed!.labels,
      },
    );

    let polled = await events(ta, 'signal.polled');
    t.is(polled.length, 1);
    t.like(polled[0], {
      actor: 'poller:am',
      data: { source: 'alertmanager', connector: 'am', returned: 1, absent: 0, fired: 1, refreshed: 0, resolved: 0, fingerprints: [fromAm!.fingerprint] },
    });
    t.is((await events(ta, 'signal.pushed')).length, 0);

    // Not due again within the minute: nothing happens.
    t.deepEqual(await poller.pollNow(), [{ connector: 'am', polled: false }]);
    t.is((await events(ta, 'signal.polled')).length, 1);

    // A minute later: polled again, refreshed, no duplicate. The debounce has passed: one episode.
    const firstSeen = rows[0]!.last_seen;
    ta.clock.advance(60_000);
    await poller.pollNow();
    rows = await held(ta);
    t.is(rows.length, 1);
    t.like(rows[0], { fingerprint: fromAm!.fingerprint, status: 'firing' });
    t.true(rows[0]!.last_seen > firstSeen);
    polled = await events(ta, 'signal.polled');
    t.is(polled.length, 2);
    t.like(polled[0], { data: { fired: 0, refreshed: 1, resolved: 0 } });
    await ta.app.tick();
    const opened = (await ta.call('GET', '/v1/episodes')).body.episodes;
    t.is(opened.length, 1);
    t.like(opened[0], { service: 'payments', alerts: ['DiskFull'], state: 'open' });

    // Resolved in Alertmanager: the next poll no longer returns it, so it is resolved here and
    // its episode closes.
    await postToAm(t, am, [{ labels, annotations, startsAt, endsAt: new Date(Date.now() - 1000).toISOString() }]);
    t.deepEqual(await amAlerts(am), []);
    ta.clock.advance(60_000);
    await poller.pollNow();
    rows = await held(ta);
    t.is(rows.length, 1);
    t.like(rows[0], { fingerprint: fromAm!.fingerprint, status: 'resolved' });
    t.not(rows[0]!.ended_at, null);
    polled = await events(ta, 'signal.polled');
    t.is(polled.length, 3);
    t.like(polled[0], { data: { returned: 0, absent: 1, fired: 0, refreshed: 0, resolved: 1, fingerprints: [fromAm!.fingerprint] } });
    await ta.app.episodes.process();
    const closed = (await ta.call('GET', `/v1/episodes/${opened[0].id}`)).body;
    t.like(closed, { state: 'closed' });
    t.deepEqual(
      closed.signals.map((s: { fingerprint: string; status: string }) => [s.fingerprint, s.status]),
      [[fromAm!.fingerprint, 'resolved']],
    );

    // Nothing firing, nothing to resolve: a poll writes nothing.
    ta.clock.advance(60_000);
    await poller.pollNow();
    t.is((await events(ta, 'signal.polled')).length, 3);

    const connector = (await ta.call('GET', '/v1/connectors/am')).body;
    t.like(connector, { state: 'ok', last_problem: null });
    const verify = await ta.call('GET', '/v1/ledger/verify');
    t.true(verify.body.ok, JSON.stringify(verify.body));
  },
);

alertmanagerTest('a poll resolves only what its own connector held; a push of the same alert takes it over; filter and poll_s apply', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const am = await startAlertmanager(t, AM_CONFIG);
  const poller = ta.app.poller;
  const startsAt = new Date(Date.now() - 5000).toISOString();
  const polledLabels = { alertname: 'Polled', service: 'api' };
  const takenLabels = { alertname: 'TakenOver', service: 'api' };
  await postToAm(t, am, [
    { labels: polledLabels, startsAt },
    { labels: takenLabels, startsAt },
    { labels: { alertname: 'Elsewhere', service: 'web' }, startsAt },
  ]);
  t.is(
    (await ta.call('PUT', '/v1/connectors/am', { body: { kind: 'alertmanager', settings: { url: am.base, poll_s: 30, filter: ['service="api"'] } } })).status,
    201,
  );
  // An alert pushed by another tool: no poll ever resolves it.
  const push = await ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name: 'Pushed', service: 'api', severity: 'warning' } });
  t.is(push.status, 202, JSON.stringify(push.body));
  await poller.pollNow();
  const state = async () => (await held(ta)).map((r) => [r.name, r.status, JSON.parse(r.labels).poller ?? null]).sort();
  t.deepEqual(
    await state(),
    [
      ['Polled', 'firing', 'am'],
      ['Pushed', 'firing', null],
      ['TakenOver', 'firing', 'am'],
    ],
    'the filter leaves Elsewhere out',
  );

  // Alertmanager's webhook delivers TakenOver too: the push refreshes it and it is the push's now.
  const taken = (await amAlerts(am)).find((x) => x.labels.alertname === 'TakenOver')!;
  const webhook = {
    version: '4',
    groupKey: '{}',
    status: 'firing',
    receiver: 'oncall',
    alerts: [{ status: 'firing', labels: taken.labels, annotations: {}, startsAt: taken.startsAt, fingerprint: taken.fingerprint }],
  };
  t.is((await ta.call('POST', '/v1/alerts/alertmanager', { token: INGEST_TOKEN, body: webhook })).status, 202);
  t.deepEqual(await state(), [
    ['Polled', 'firing', 'am'],
    ['Pushed', 'firing', null],
    ['TakenOver', 'firing', null],
  ]);

  // Both end in Alertmanager; due again after poll_s (30 s, not 60): only the connector's own is resolved.
  const endsAt = new Date(Date.now() - 1000).toISOString();
  await postToAm(t, am, [
    { labels: polledLabels, startsAt, endsAt },
    { labels: takenLabels, startsAt, endsAt },
  ]);
  ta.clock.advance(30_000);
  await poller.pollNow();
  t.deepEqual(await state(), [
    ['Polled', 'resolved', 'am'],
    ['Pushed', 'firing', null],
    ['TakenOver', 'firing', null],
  ]);
  t.like((await events(ta, 'signal.polled'))[0], { data: { returned: 0, absent: 1, resolved: 1 } });
  t.true((await ta.app.verifyLedger()).ok);
});

alertmanagerTest('a failed poll changes nothing and shows the problem; it is recorded once, not at every poll', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const am = await startAlertmanager(t, AM_CONFIG);
  const poller = ta.app.poller;
  await postToAm(t, am, [{ labels: { alertname: 'QueueBacklog', severity: 'warning', service: 'orders' }, startsAt: new Date().toISOString() }]);
  t.is((await ta.call('PUT', '/v1/connectors/am', { body: { kind: 'alertmanager', settings: { url: am.base, timeout_s: 2 } } })).status, 201);
  await poller.pollNow();
  const before = await held(ta);
  t.is(before.length, 1);

  // The connector now points at a port nothing listens on.
  const dead = `http://127.0.0.1:${await freePort()}`;
  t.is((await ta.call('PUT', '/v1/connectors/am', { body: { kind: 'alertmanager', settings: { url: dead, timeout_s: 2 } } })).status, 200);
  ta.clock.advance(60_000);
  const [outcome] = await poller.pollNow();
  t.like(outcome, { connector: 'am', polled: true, ok: false });
  t.regex(outcome!.problem!, /^the poll failed: cannot connect to 127\.0\.0\.1:\d+: connection refused$/);
  // The app's real 10 s tick may group the alert into an episode meanwhile on a slow machine:
  // that is grouping, not the poll, so the episode is left out of the comparison.
  const unpolled = (rows: HeldRow[]) => rows.map((r) => ({ ...r, episode_id: null }));
  t.deepEqual(unpolled(await held(ta)), unpolled(before), 'the held set is untouched');
  const view = (await ta.call('GET', '/v1/connectors/am')).body;
  t.like(view, { state: 'problem', last_problem: outcome!.problem });
  ta.clock.advance(60_000);
  await poller.pollNow();
  t.deepEqual(unpolled(await held(ta)), unpolled(before));
  const failed = await events(ta, 'connector.poll_failed');
  t.is(failed.length, 1, 'the same problem again is not recorded again');
  t.like(failed[0], { actor: 'system', data: { name: 'am', kind: 'alertmanager', problem: outcome!.problem } });
  t.is((await events(ta, 'signal.polled')).length, 1);

  // Back to the live Alertmanager: the poll works and the connector is ok again.
  t.is((await ta.call('PUT', '/v1/connectors/am', { body: { kind: 'alertmanager', settings: { url: am.base } } })).status, 200);
  ta.clock.advance(60_000);
  await poller.pollNow();
  t.like((await ta.call('GET', '/v1/connectors/am')).body, { state: 'ok', last_problem: null });
  t.like((await held(ta))[0], { status: 'firing', fingerprint: before[0]!.fingerprint });
  t.true((await ta.app.verifyLedger()).ok);
});

// ---- several host processes

alertmanagerTest('the node-cron heartbeat polls on its own once the server listens', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const am = await startAlertmanager(t, AM_CONFIG);
  await postToAm(t, am, [{ labels: { alertname: 'OnItsOwn', service: 'billing' }, startsAt: new Date().toISOString() }]);
  t.is((await ta.call('PUT', '/v1/connectors/am', { body: { kind: 'alertmanager', settings: { url: am.base } } })).status, 201);
  // The only real wait in this file: the scheduler itself (a heartbeat every 5 s) is under test.
  const row = await waitFor('the heartbeat to poll', async () => (await held(ta)).find((r) => r.name === 'OnItsOwn'), 12_000);
  t.is(row.status, 'firing');
  t.like(await ta.app.db('leases').where({ name: 'poll:am' }).first(), { holder: ta.app.poller.holder });
});

test('nothing is polled before the service is operating', async (t) => {
  const ta = await startApp(t);
  t.deepEqual(await ta.app.poller.pollNow(), []);
});

testNeeding(mariadbMissing ?? amMissing, 'two host processes on one MariaDB: each connector is polled once per interval', async (t) => {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withServer(MARIADB_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
  const url = new URL(MARIADB_URL);
  url.pathname = `/${name}`;
  const dirs = [mkdtempSync(path.join(tmpdir(), 'oncall-poll-a-')), mkdtempSync(path.join(tmpdir(), 'oncall-poll-b-'))];
  const stores: TestStore[] = dirs.map((dataDir) => ({ dataDir, databaseUrl: url.toString(), cleanup: async () => {} }));
  // Registered first, so it runs last: after both apps have closed.
  t.teardown(async () => {
    await withServer(MARIADB_URL, (db) => db.raw(`drop database if exists \`${name}\``));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const clock = new TestClock('2026-06-01T00:00:00.000Z');
  const env = { SERVICE_SECRET_KEY: 'one-secret-key-shared-by-both-host-processes' };
  const a = await startApp(t, { store: stores[0], clock, env });
  const b = await startApp(t, { store: stores[1], clock, env });
  await makeOperating(a);
  await b.app.tick();

  const am = await startAlertmanager(t, AM_CONFIG);
  await postToAm(t, am, [{ labels: { alertname: 'Latency', severity: 'critical', service: 'checkout' }, startsAt: new Date().toISOString() }]);
  t.is((await a.call('PUT', '/v1/connectors/am', { body: { kind: 'alertmanager', settings: { url: am.base } } })).status, 201);
  const pollers = [a.app.poller, b.app.poller];
  t.not(pollers[0]!.holder, pollers[1]!.holder);

  const round = async () => (await Promise.all(pollers.map((p) => p.pollNow()))).flat().filter((o) => o.polled).length;
  const polledEvents = async () => (await events(a, 'signal.polled')).length;

  // Both beat at once, again and again within one interval: one poll.
  const first = (await round()) + (await round()) + (await round());
  t.true(first <= 1);
  t.is(await polledEvents(), 1);
  const holder1 = (await a.app.db('leases').where({ name: 'poll:am' }).first()).holder;
  t.true(pollers.some((p) => p.holder === holder1));

  for (let i = 2; i <= 4; i++) {
    clock.advance(60_000);
    await round();
    await round();
    t.is(await polledEvents(), i, `one poll in interval ${i}`);
  }
  const rows = await held(a);
  t.is(rows.length, 1);
  t.like(rows[0], { status: 'firing', name: 'Latency' });
  t.like((await events(a, 'signal.polled'))[0], { data: { fired: 0, refreshed: 1 } });
  t.true((await a.app.verifyLedger()).ok);
  t.true((await b.app.verifyLedger()).ok);
});
