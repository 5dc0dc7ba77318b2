import { alertmanagerTest, startAlertmanager, waitFor } from '../helpers/alertmanager.ts';
import { INGEST_TOKEN, makeOperating, startApp } from '../helpers/app.ts';

/**
 * End to end with a real Alertmanager (Debian's `prometheus-alertmanager`, installed by .ci/run):
 * its webhook receiver points at the service with the ingest token as bearer; alerts posted to
 * Alertmanager's own API reach the held set and the ledger through it. Waits poll real
 * processes with a deadline; Alertmanager is killed after the test whatever happens.
 */

type HeldRow = { fingerprint: string; status: string; name: string; severity: string; service: string | null; source: string; ended_at: unknown };

alertmanagerTest(
  'Alertmanager delivers a firing then a resolved alert through its webhook: held, resolved, in the ledger, and one episode opened and closed',
  async (t) => {
    const ta = await startApp(t);
    await makeOperating(ta);

    const am = await startAlertmanager(
      t,
      `route:
  receiver: oncall
  group_by: ['alertname']
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 24h
receivers:
  - name: oncall
    webhook_configs:
      - url: '${ta.base}/v1/alerts/alertmanager'
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials: '${INGEST_TOKEN}'
`,
    );
    const held = async () => (await ta.app.db('held_alerts').select('fingerprint', 'status', 'name', 'severity', 'service', 'source', 'ended_at')) as HeldRow[];
    const pushed = async () =>
      (await ta.call('GET', '/v1/ledger?type=signal.pushed&limit=100')).body.events as Array<{ actor: string; data: Record<string, unknown> }>;
    const post = async (alerts: unknown) => {
      const res = await fetch(`${am.base}/api/v2/alerts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(alerts) });
      t.is(res.status, 200, `Alertmanager refused the alerts: ${await res.text()}`);
    };
    const wait = <T>(what: string, check: () => Promise<T | null | undefined | false>) =>
      waitFor(what, check).catch((e: Error) => {
        throw new Error(`${e.message}\n--- service log (last 5) ---\n${ta.logs.slice(-5).join('')}\n--- alertmanager output ---\n${am.output()}`);
      });

    const labels = { alertname: 'DiskFull', severity: 'critical', service: 'payments' };
    const startsAt = new Date(Date.now() - 60_000).toISOString();
    const annotations = { summary: 'disk /var is 98% full' };

    // Firing: Alertmanager sends it on at once (group_wait 0s).
    await post([{ labels, annotations, startsAt }]);
    const firing = await wait('the service to hold the alert firing', async () => {
      const rows = await held();
      return rows.length === 1 && rows[0]?.status === 'firing' ? rows[0] : null;
    });
    t.like(firing, { name: 'DiskFull', severity: 'critical', service: 'payments', source: 'alertmanager' });
    // The service keeps Alertmanager's own fingerprint.
    const amAlerts = (await (await fetch(`${am.base}/api/v2/alerts`)).json()) as Array<{ fingerprint: string }>;
    t.deepEqual(
      amAlerts.map((a) => a.fingerprint),
      [firing.fingerprint],
    );

    // The debounce (20 s on the injected clock) passes: one episode opens for payments.
    ta.clock.advance(20_000);
    await ta.app.tick();
    const opened = (await ta.call('GET', '/v1/episodes')).body.episodes;
    t.is(opened.length, 1);
    t.like(opened[0], { service: 'payments', alerts: ['DiskFull'], kind: 'incident', state: 'open', decision: 'abstain', outcome: '' });
    t.is(opened[0].outcome_detail.reason, 'nobody to tell: no on-call recipients or targets are set', 'nobody is set to be told, and the episode says so');

    // Resolved: the same alert with endsAt in the past; sent on at the next group interval.
    await post([{ labels, annotations, startsAt, endsAt: new Date(Date.now() - 1000).toISOString() }]);
    const resolved = await wait('the service to hold the alert resolved', async () => {
      const rows = await held();
      return rows.length === 1 && rows[0]?.status === 'resolved' ? rows[0] : null;
    });
    t.is(resolved.fingerprint, firing.fingerprint);
    t.not(resolved.ended_at, null);
    await ta.app.episodes.process();
    const closed = (await ta.call('GET', `/v1/episodes/${opened[0].id}`)).body;
    t.like(closed, { state: 'closed', duration_s: 0 });
    t.deepEqual(
      closed.signals.map((s: { fingerprint: string; status: string }) => [s.fingerprint, s.status]),
      [[firing.fingerprint, 'resolved']],
    );
    t.deepEqual(
      // The investigation's events (retrieval., check., decision.) are tested in investigation.test.ts.
      closed.timeline.map((e: { type: string }) => e.type).filter((type: string) => type.startsWith('episode.')),
      ['episode.opened', 'episode.decided', 'episode.closed'],
    );

    // The ledger: one signal.pushed per webhook call (newest first), actor the ingest token.
    const events = await pushed();
    t.is(events.length, 2, JSON.stringify(events));
    t.like(events[1], {
      actor: 'ingest-token:alertmanager',
      data: { source: 'alertmanager', fired: 1, refreshed: 0, resolved: 0, unknown_resolved: 0, fingerprints: [firing.fingerprint] },
    });
    t.like(events[0], {
      actor: 'ingest-token:alertmanager',
      data: { source: 'alertmanager', fired: 0, refreshed: 0, resolved: 1, unknown_resolved: 0, fingerprints: [firing.fingerprint] },
    });
    t.is((await ta.call('GET', '/v1/ledger?type=signal.rejected')).body.events.length, 0);
    const verify = await ta.call('GET', '/v1/ledger/verify');
    t.is(verify.status, 200);
    t.true(verify.body.ok, JSON.stringify(verify.body));
  },
);
