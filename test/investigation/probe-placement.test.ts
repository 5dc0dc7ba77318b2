// Alerts about a probe belong to the probed service (issue 21, class 9): a blackbox alert carries
// the prober's job and no service label; it is placed by the probed address against the estate's
// health URLs (or a link), else left unplaced with the reason, never on a phantom service named
// after the prober.
import test from 'ava';
import { readFileSync } from 'node:fs';
import { EstateIndex, probeOf } from '../../host/estate/resolver.ts';
import type { ServiceView } from '../../host/estate/estate.model.ts';
import { SECOND } from '../../host/clock.ts';
import { INGEST_TOKEN, makeOperating, startApp } from '../helpers/app.ts';

const PROBE = JSON.parse(readFileSync(new URL('../../plugins/normalisers/alertmanager/fixtures/probe-failure-firing.json', import.meta.url), 'utf8'));

const svc = (name: string, health_url: string | null): ServiceView =>
  ({
    name,
    owner: null,
    team: null,
    tier: null,
    approvers: [],
    technologies: [],
    health_url,
    links: [],
    depends_on: [],
    check_settings: {},
  }) as unknown as ServiceView;

test('a probe is told by its expression, its name or a URL instance, and only without a service label of its own', (t) => {
  const labels = { alertname: 'X', job: 'blackbox', instance: '10.0.0.5:8080' };
  t.is(probeOf({ name: 'X', labels, context: { expression: 'probe_success == 0' } }), '10.0.0.5:8080');
  t.is(probeOf({ name: 'BlackboxProbeFailed', labels }), '10.0.0.5:8080');
  t.is(probeOf({ name: 'X', labels: { ...labels, instance: 'https://pay.bank.example/health' } }), 'https://pay.bank.example/health');
  t.is(probeOf({ name: 'X', labels }), null, 'an ordinary alert of a scrape target');
  t.is(probeOf({ name: 'ProbeFailure', labels: { ...labels, service: 'payments' } }), null, 'its own service label wins');
});

test('the resolver places a probe on the service whose health URL it probes, by URL or by host and port alone', (t) => {
  const index = new EstateIndex(1, [
    svc('payments', 'https://pay.bank.example/health/'),
    svc('orders', 'http://10.0.0.5:8080/healthz'),
    svc('http_checks', null),
  ]);
  const probe = (instance: string) => ({ name: 'ProbeFailure', service: 'http_checks', labels: { alertname: 'ProbeFailure', job: 'http_checks', instance } });
  t.like(index.resolve(probe('https://pay.bank.example/health')), { service: 'payments', rule: 'probe_target', certain: true });
  t.like(index.resolve(probe('10.0.0.5:8080')), { service: 'orders', rule: 'probe_target', certain: false });
  const none = index.resolve(probe('https://unknown.bank.example/'));
  t.like(none, { service: null, rule: 'none' });
  t.regex(none.why!, /a probe of https:\/\/unknown\.bank\.example\/, which is no service's health URL/);
});

test('pushed through Alertmanager: the probe joins the probed service; without one it is unplaced with the reason, and no phantom service appears', async (t) => {
  const ta = await startApp(t, { manualTick: true });
  await makeOperating(ta);
  const push = () => ta.call('POST', '/v1/alerts/alertmanager', { token: INGEST_TOKEN, body: PROBE });

  const lost = await push();
  t.is(lost.status, 202);
  t.is(lost.body.signals[0].service, null);
  const pushed = (await ta.call('GET', '/v1/ledger?type=signal.pushed')).body.events[0];
  t.like(pushed.data.unplaced[0], { name: 'ProbeFailure' });
  t.regex(pushed.data.unplaced[0].why, /a probe of https:\/\/server\.example\.org/);
  ta.clock.advance(21 * SECOND);
  await ta.app.episodes.process();
  const eps = (await ta.call('GET', '/v1/episodes')).body.episodes as any[];
  t.deepEqual(
    eps.map((e) => e.service),
    ['unknown'],
  );
  t.false(JSON.stringify((await ta.call('GET', '/v1/estate')).body).includes('"http_checks"'), 'the prober is no service');

  const put = await ta.call('PUT', '/v1/estate/overrides', { body: { services: { website: { health_url: 'https://server.example.org/' } } } });
  t.is(put.status, 200, JSON.stringify(put.body));
  const found = await push();
  t.is(found.body.signals[0].service, 'website');
});
