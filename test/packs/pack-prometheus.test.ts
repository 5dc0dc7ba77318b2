// The `prometheus` pack against Debian's real Prometheus: each test starts small exporters
// (text-format metrics whose values it changes), a Prometheus scraping them every second, and
// runs the pack's causes as an investigation does (test/helpers/pack-live.ts). One test runs the
// checks through the app: a saved connector, the estate's links and settings.
import { makeOperating, startApp } from '../helpers/app.ts';
import { family, startExporter } from '../helpers/exporter.ts';
import { check, rerun, scrapedAgain, scraping, service, workload } from '../helpers/pack-live.ts';
import { prometheusTest } from '../helpers/prometheus.ts';

prometheusTest('prometheus/target-down: ruled out while every target is up, holds once a target answers 503, and says which selector it used', async (t) => {
  const render = () => family('app_info', 'gauge', [[{}, 1]]);
  const a = await startExporter(t, render);
  const b = await startExporter(t, render);
  const p = await startExporter(t, render);
  const prom = await scraping(t, [
    { job: 'orders', exporters: [a, b] },
    { job: 'payments-api', exporters: [p], labels: { service: 'payments' } },
  ]);
  const orders = service('orders', [workload('job="orders"')]);

  const healthy = await check(prom.base, 'prometheus/target-down', orders);
  t.is(healthy.verdict, 'ruled_out', healthy.reason);
  t.regex(healthy.reason, /all 2 scrape targets of \{job="orders"\} \(a workload link of the service\) are up/);
  t.like(healthy.evidence[0], { source: 'prometheus', kind: 'metric', query: 'up{job="orders"}', observed: { targets: 2, down: 0 } });

  b.down = true;
  await scrapedAgain(prom.base, 'orders', [b], 2);
  const down = await check(prom.base, 'prometheus/target-down', orders);
  t.is(down.verdict, 'holds', down.reason);
  t.true(down.reason.includes(`1 of 2 scrape targets`) && down.reason.includes(b.target), down.reason);
  t.like(down.evidence[0], { observed: { targets: 2, down: 1, series: [{ labels: { instance: b.target, job: 'orders' }, value: 0 }] } });
  t.like(down.verification, { cause: 'prometheus/target-down', expect: 'ruled_out' });

  // No workload link: the service's name, as the `service` label of its targets.
  const byName = await check(prom.base, 'prometheus/target-down', service('payments'));
  t.is(byName.verdict, 'ruled_out', byName.reason);
  t.true(byName.reason.includes(`{service="payments"} (no workload link: found by the service's name)`), byName.reason);
  // No link and no target carries the name: it cannot be placed.
  const ghost = await check(prom.base, 'prometheus/target-down', service('ghost'));
  t.like(ghost, { verdict: 'unknown', obstacle: "it can't be placed" });
  t.regex(ghost.reason, /the estate links no workload to ghost, and Prometheus \(prometheus\) has no target with job="ghost" or service="ghost"/);
  // A workload link matching nothing: the data isn't there.
  const gone = await check(prom.base, 'prometheus/target-down', service('orders', [workload('job="orders-old"')]));
  t.like(gone, { verdict: 'unknown', obstacle: "the data isn't there" });
});

prometheusTest('prometheus/error-rate: ruled out at a 1 % 5xx share, holds when 5xx requests climb, with no week-old data to compare', async (t) => {
  const step = { ok: 100, err: 1 };
  const total = { ok: 0, err: 0 };
  const e = await startExporter(t, () => {
    total.ok += step.ok;
    total.err += step.err;
    return family('http_requests_total', 'counter', [
      [{ code: '200', method: 'GET' }, total.ok],
      [{ code: '503', method: 'GET' }, total.err],
    ]);
  });
  const prom = await scraping(t, [{ job: 'orders', exporters: [e] }]);
  const orders = service('orders', [workload('job="orders"')]);
  const query = '(sum(rate(http_requests_total{job="orders",code=~"5.."}[5m])) or vector(0)) / sum(rate(http_requests_total{job="orders"}[5m]))';

  const healthy = await check(prom.base, 'prometheus/error-rate', orders);
  t.is(healthy.verdict, 'ruled_out', healthy.reason);
  t.is(healthy.evidence[0]!.query, query);
  const share = (healthy.evidence[0]!.observed as { share: number }).share;
  t.true(share > 0.005 && share < 0.02, String(share));
  t.like(healthy.evidence[1], { kind: 'baseline', observed: { share_week_before: null } });

  step.err = 400;
  await scrapedAgain(prom.base, 'orders', [e], 3);
  const failing = await check(prom.base, 'prometheus/error-rate', orders);
  t.is(failing.verdict, 'holds', failing.reason);
  t.true((failing.evidence[0]!.observed as { share: number }).share > 0.05);
  t.regex(failing.reason, /no data a week before to compare with/);
  // The threshold is the estate's to override per service.
  const lenient = await check(prom.base, 'prometheus/error-rate', orders, { settings: { threshold: 0.95 } });
  t.is(lenient.verdict, 'ruled_out', lenient.reason);
});

/** Histogram buckets (cumulative) of `counts` observations per bucket bound. */
function histogram(name: string, perBucket: Map<number, number>): string {
  const bounds = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, Infinity];
  let cum = 0;
  let sum = 0;
  const lines = bounds.map((le) => {
    const n = perBucket.get(le) ?? 0;
    cum += n;
    sum += n * (Number.isFinite(le) ? le : 10);
    return `${name}_bucket{le="${Number.isFinite(le) ? le : '+Inf'}"} ${cum}`;
  });
  return `# TYPE ${name} histogram\n${lines.join('\n')}\n${name}_sum ${sum}\n${name}_count ${cum}\n`;
}

prometheusTest('prometheus/latency: ruled out while requests take 100 ms, holds once slow requests push p99 past 1 s', async (t) => {
  const observed = new Map<number, number>();
  const slow = { on: false };
  const e = await startExporter(t, () => {
    observed.set(0.1, (observed.get(0.1) ?? 0) + 100);
    if (slow.on) observed.set(2.5, (observed.get(2.5) ?? 0) + 50);
    return histogram('http_request_duration_seconds', observed);
  });
  const prom = await scraping(t, [{ job: 'checkout', exporters: [e] }]);
  const checkout = service('checkout', [workload('job="checkout"')]);

  const fast = await check(prom.base, 'prometheus/latency', checkout);
  t.is(fast.verdict, 'ruled_out', fast.reason);
  t.is(fast.evidence[0]!.query, 'histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{job="checkout"}[5m])))');
  t.true((fast.evidence[0]!.observed as { p99_seconds: number }).p99_seconds <= 0.1);

  slow.on = true;
  await scrapedAgain(prom.base, 'checkout', [e], 3);
  const late = await check(prom.base, 'prometheus/latency', checkout);
  t.is(late.verdict, 'holds', late.reason);
  t.true((late.evidence[0]!.observed as { p99_seconds: number }).p99_seconds > 1);
  // A histogram the service does not have: the data isn't there.
  const other = await check(prom.base, 'prometheus/latency', checkout, { settings: { histogram: 'grpc_server_handling_seconds' } });
  t.like(other, { verdict: 'unknown', obstacle: "the data isn't there" });
});

prometheusTest('prometheus/disk-full: ruled out at 40 % free (a full read-only filesystem left out), holds at 2 % free', async (t) => {
  const GiB = 1024 ** 3;
  const data = { avail: 40 * GiB };
  const fs = (mountpoint: string, device: string, fstype: string) => ({ device, fstype, mountpoint });
  const e = await startExporter(t, () =>
    [
      family('node_filesystem_avail_bytes', 'gauge', [
        [fs('/', '/dev/sda1', 'ext4'), 50 * GiB],
        [fs('/data', '/dev/sdb1', 'xfs'), data.avail],
        [fs('/snap/core', '/dev/loop0', 'squashfs'), 0],
      ]),
      family('node_filesystem_size_bytes', 'gauge', [
        [fs('/', '/dev/sda1', 'ext4'), 100 * GiB],
        [fs('/data', '/dev/sdb1', 'xfs'), 100 * GiB],
        [fs('/snap/core', '/dev/loop0', 'squashfs'), 0.1 * GiB],
      ]),
      family('node_filesystem_readonly', 'gauge', [
        [fs('/', '/dev/sda1', 'ext4'), 0],
        [fs('/data', '/dev/sdb1', 'xfs'), 0],
        [fs('/snap/core', '/dev/loop0', 'squashfs'), 1],
      ]),
    ].join(''),
  );
  const prom = await scraping(t, [{ job: 'node', exporters: [e] }]);
  const db = service('orders-db', [workload('job="node"')]);

  const roomy = await check(prom.base, 'prometheus/disk-full', db);
  t.is(roomy.verdict, 'ruled_out', roomy.reason);
  t.like(roomy.evidence[0], { observed: { total: 2, at_risk: 0 } });
  t.like(roomy.evidence[1], { observed: { total: 2, at_risk: 0 } });

  data.avail = 2 * GiB;
  await scrapedAgain(prom.base, 'node', [e], 2);
  const full = await check(prom.base, 'prometheus/disk-full', db);
  t.is(full.verdict, 'holds', full.reason);
  t.true(full.reason.includes(`less than 5.00 % free on ${e.target}:/data (2.00 % free)`), full.reason);
  t.like(full.evidence[0], { observed: { at_risk: 1, filesystems: [{ labels: { mountpoint: '/data' }, free_ratio: 0.02 }] } });
});

prometheusTest('prometheus/memory-pressure: ruled out at 50 % available, holds after a dip to 5 % within the window', async (t) => {
  const GiB = 1024 ** 3;
  const mem = { available: 8 * GiB };
  const e = await startExporter(t, () =>
    [family('node_memory_MemAvailable_bytes', 'gauge', [[{}, mem.available]]), family('node_memory_MemTotal_bytes', 'gauge', [[{}, 16 * GiB]])].join(''),
  );
  const prom = await scraping(t, [{ job: 'node', exporters: [e] }]);
  const cache = service('cache', [workload('job="node"')]);

  const calm = await check(prom.base, 'prometheus/memory-pressure', cache);
  t.is(calm.verdict, 'ruled_out', calm.reason);
  t.like(calm.evidence[0], { kind: 'series', query: 'node_memory_MemAvailable_bytes{job="node"} / node_memory_MemTotal_bytes{job="node"}' });
  t.like(calm.evidence[0], { observed: { step_s: 5, hosts: [{ min: 0.5, last: 0.5 }] } });

  mem.available = 0.8 * GiB;
  await scrapedAgain(prom.base, 'node', [e], 2);
  mem.available = 8 * GiB; // recovered (an OOM kill freed it): the window still shows the dip
  await scrapedAgain(prom.base, 'node', [e], 2);
  const pressed = await check(prom.base, 'prometheus/memory-pressure', cache, { settings: { window: '1m' } });
  t.is(pressed.verdict, 'holds', pressed.reason);
  t.like(pressed.evidence[0], { observed: { step_s: 1, hosts: [{ min: 0.05, last: 0.5 }] } });
});

prometheusTest('prometheus/restarts: ruled out while the start time is an hour old, holds once the process starts again', async (t) => {
  const proc = { started: Math.floor(Date.now() / 1000) - 3600 };
  const e = await startExporter(t, () => family('process_start_time_seconds', 'gauge', [[{}, proc.started]]));
  const prom = await scraping(t, [{ job: 'worker', exporters: [e] }]);
  const worker = service('worker', [workload('job="worker"')]);

  const steady = await check(prom.base, 'prometheus/restarts', worker);
  t.is(steady.verdict, 'ruled_out', steady.reason);
  t.regex(steady.evidence[0]!.query, /^changes\(process_start_time_seconds\{job="worker"\}\[900s\]\)$/);

  proc.started = Math.floor(Date.now() / 1000);
  await scrapedAgain(prom.base, 'worker', [e], 2);
  const restarted = await check(prom.base, 'prometheus/restarts', worker, { openedAt: new Date(Date.now() - 60_000).toISOString() });
  t.is(restarted.verdict, 'holds', restarted.reason);
  t.like(restarted.evidence[0], { observed: { restarted: 1, processes: [{ changes: 1 }] } });
  t.regex(restarted.evidence[0]!.query, /^changes\(process_start_time_seconds\{job="worker"\}\[9[67]\ds\]\)$/);
});

prometheusTest('the pack runs in the app through a saved prometheus connector, with the estate links and check_settings', async (t) => {
  const started = Math.floor(Date.now() / 1000) - 3600;
  const e = await startExporter(t, () => family('process_start_time_seconds', 'gauge', [[{}, started]]));
  const prom = await scraping(t, [{ job: 'orders', exporters: [e] }]);
  const ta = await startApp(t);
  await makeOperating(ta);
  t.is((await ta.call('PUT', '/v1/connectors/metrics', { body: { kind: 'prometheus', settings: { url: prom.base } } })).status, 201);
  const put = await ta.call('PUT', '/v1/estate/overrides', {
    body: {
      services: {
        orders: { links: [{ kind: 'workload', match: 'job="orders"', connector: 'metrics' }], check_settings: { 'prometheus/restarts': { lookback: '2m' } } },
      },
    },
  });
  t.true(put.status === 200 || put.status === 201, JSON.stringify(put.body));
  const packs = await ta.call('GET', '/v1/packs');
  t.like(
    packs.body.packs.find((p: any) => p.name === 'prometheus'),
    { version: '1.2.0', state: 'loaded', problem: null },
  );

  const run = await ta.call('POST', '/v1/checks/run', { body: { service: 'orders', at: new Date().toISOString() } });
  t.is(run.status, 200, JSON.stringify(run.body));
  const verdict = (id: string) => run.body.verdicts.find((v: any) => v.cause === id);
  t.like(verdict('prometheus/target-down'), { verdict: 'ruled_out' });
  t.like(verdict('prometheus/error-rate'), { verdict: 'unknown', obstacle: "the data isn't there" });
  t.like(verdict('prometheus/restarts'), { verdict: 'ruled_out' });
  const up = run.body.evidence.find((x: any) => x.cause === 'prometheus/target-down');
  t.like(up, { source: 'metrics', query: 'up{job="orders"}', observed: { targets: 1, down: 0 } });
  // The estate's check_settings for the service: a 2-minute lookback instead of 15.
  const restarts = run.body.evidence.filter((x: any) => x.cause === 'prometheus/restarts').map((x: any) => x.query);
  t.deepEqual(restarts, ['changes(process_start_time_seconds{job="orders"}[120s])']);
});

prometheusTest(
  'prometheus/restarts: the first start of a new process is not a restart, and the evidence re-run in Prometheus gives the verdict its numbers',
  async (t) => {
    // A healthy service whose process (and exporter) started a moment ago: its series is new in the window.
    const started = Math.floor(Date.now() / 1000) - 5;
    const e = await startExporter(t, () => family('process_start_time_seconds', 'gauge', [[{}, started]]));
    const prom = await scraping(t, [{ job: 'fresh', exporters: [e] }]);
    const fresh = service('fresh', [workload('job="fresh"')]);
    const first = await check(prom.base, 'prometheus/restarts', fresh);
    t.is(first.verdict, 'ruled_out', `a first start within the 15m lookback is not a restart: ${first.reason}`);
    t.is(first.evidence.length, 1, 'the evidence is the one query that decided');
    const again = await rerun(prom.base, first.evidence[0]!.query, first.evidence[0]!.at);
    t.deepEqual(
      again.map((s) => s.value),
      (first.evidence[0]!.observed as { processes: Array<{ changes: number }> }).processes.map((p) => p.changes),
      'the query re-run at its moment gives the numbers the verdict cites',
    );
  },
);

prometheusTest('prometheus/target-down: two workload links selecting the same target (job= and service=) count it once', async (t) => {
  const render = () => family('app_info', 'gauge', [[{}, 1]]);
  const a = await startExporter(t, render);
  const prom = await scraping(t, [{ job: 'orders', exporters: [a], labels: { service: 'orders' } }]);
  const orders = service('orders', [workload('job="orders"'), workload('service="orders"')]);
  const v = await check(prom.base, 'prometheus/target-down', orders);
  t.is(v.verdict, 'ruled_out', v.reason);
  t.regex(v.reason, /^the one scrape target of /, 'one target, not two');
  t.like(v.evidence[0], { query: '(up{job="orders"}) or (up{service="orders"})', observed: { targets: 1 } });
  a.down = true;
  await scrapedAgain(prom.base, 'orders', [a], 2);
  const down = await check(prom.base, 'prometheus/target-down', orders);
  t.regex(down.reason, /^1 of 1 scrape targets/, down.reason);
});
