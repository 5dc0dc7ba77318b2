// The `web` pack against Debian's real nginx (with prometheus-nginx-exporter) and HAProxy (its
// built-in exporter), scraped every second by Debian's Prometheus: backends the test runs are
// stopped or made to fail, nginx's connections are exhausted for real, HAProxy's frontend is
// filled to its maxconn, and each cause is run as an investigation runs it.
import { existsSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import type { ExecutionContext } from 'ava';
import { startBackend } from '../helpers/backend.ts';
import { testNeeding } from '../helpers/needs.ts';
import { check, rerun, service, untilPrometheus, workload } from '../helpers/pack-live.ts';
import { PROMETHEUS_BIN, startPrometheus } from '../helpers/prometheus.ts';
import { HAPROXY_BIN, NGINX_BIN, NGINX_EXPORTER_BIN, startHaproxy, startNginx, startNginxExporter } from '../helpers/web-tier.ts';

function missing(bins: Array<[string, string]>): string | null {
  for (const [bin, pkg] of bins) if (!existsSync(bin)) return `${bin} not found (apt-get install ${pkg})`;
  return null;
}
const PROM: [string, string] = [PROMETHEUS_BIN, 'prometheus'];

/** Opens `n` connections that send half a request and wait: nginx cannot reuse them. Closed by the teardown, or by `close()`. */
async function halfRequests(t: ExecutionContext, address: string, n: number): Promise<{ close(): void }> {
  const [host, port] = address.split(':');
  const open: Socket[] = [];
  for (let i = 0; i < n; i++) {
    const s = connect(Number(port), host!, () => s.write('GET / HTTP/1.1\r\nHost: edge\r\n'));
    s.on('error', () => undefined);
    open.push(s);
  }
  await new Promise((r) => setTimeout(r, 300));
  const close = () => open.forEach((s) => s.destroy());
  t.teardown(close);
  return { close };
}

/** Every evidence item's query re-run in Prometheus at its moment gives samples (what a person pasting it sees). */
async function rerunnable(t: ExecutionContext, base: string, evidence: Array<{ query: string; at: string }>): Promise<void> {
  for (const e of evidence) t.true((await rerun(base, e.query, e.at)).length > 0, `${e.query} answers at ${e.at}`);
}

testNeeding(
  missing([PROM, [NGINX_BIN, 'nginx'], [NGINX_EXPORTER_BIN, 'prometheus-nginx-exporter']]),
  'web/backend-down and web/connection-limit on nginx: a stopped upstream server linked as backend holds, and so do connections nginx accepted but could not handle',
  async (t) => {
    const a = await startBackend(t);
    const b = await startBackend(t);
    const nginx = await startNginx(t, { upstreams: [a.target, b.target], workerConnections: 8 });
    const exporter = await startNginxExporter(t, nginx.statusUrl);
    const prom = await startPrometheus(t, {
      jobs: [
        { job: 'edge', targets: [exporter] },
        { job: 'edge-app', targets: [a.target, b.target] },
      ],
    });
    await untilPrometheus(prom.base, 'up{job=~"edge|edge-app"} == 1', (s) => s.length === 3, 60_000);
    await untilPrometheus(prom.base, 'count_over_time(nginx_connections_accepted{job="edge"}[1m])', (s) => (s[0]?.value ?? 0) >= 2, 60_000);
    const edge = service('edge', [workload('job="edge"'), workload('job="edge-app"', 'backend')], { technologies: ['nginx'] });

    const healthy = await check(prom.base, 'web/backend-down', edge);
    t.is(healthy.verdict, 'ruled_out', healthy.reason);
    t.is(healthy.evidence.length, 1, 'nginx has no haproxy series: only the backends decided');
    t.like(healthy.evidence[0], { query: 'up{job="edge-app"}', observed: { backends: 2, down: 0 } });
    const calm = await check(prom.base, 'web/connection-limit', edge);
    t.is(calm.verdict, 'ruled_out', calm.reason);
    t.like(calm.evidence[0], { observed: { nginx: [{ dropped: 0 }] } });
    t.regex(
      calm.evidence[0]!.query,
      /^\(increase\(nginx_connections_accepted\{job="edge"\}\[5m\]\) - increase\(nginx_connections_handled\{job="edge"\}\[5m\]\)\) or/,
    );

    // No backend link: nginx's stub_status knows no upstream, and that is said.
    const unlinked = await check(prom.base, 'web/backend-down', service('edge', [workload('job="edge"')], { technologies: ['nginx'] }));
    t.like(unlinked, { verdict: 'unknown', obstacle: "the data isn't there" });
    t.regex(unlinked.reason, /link its upstream servers as workload links named backend/);

    await b.stop();
    await untilPrometheus(prom.base, `up{instance="${b.target}"}`, (s) => s[0]?.value === 0, 60_000);
    const down = await check(prom.base, 'web/backend-down', edge);
    t.is(down.verdict, 'holds', down.reason);
    t.true(down.reason.includes(`1 of 2 backends linked as backend is down (up = 0): ${b.target}`), down.reason);
    t.deepEqual(down.subjects, [b.target], 'the same subject as prometheus/target-down, which it explains');
    await rerunnable(t, prom.base, down.evidence);

    // 8 worker_connections: two listeners and six half-sent requests fill them (once read, nginx
    // cannot reuse them); it drops the connections that come after.
    const held = await halfRequests(t, nginx.address, 6);
    const more = await halfRequests(t, nginx.address, 6);
    held.close();
    more.close();
    await untilPrometheus(prom.base, 'nginx_connections_accepted{job="edge"} - nginx_connections_handled{job="edge"}', (s) => (s[0]?.value ?? 0) >= 1, 60_000);
    const full = await check(prom.base, 'web/connection-limit', edge);
    t.is(full.verdict, 'holds', full.reason);
    t.regex(full.reason, /nginx 127\.0\.0\.1:\d+ dropped \d+ connections? it accepted/);
    await rerunnable(t, prom.base, full.evidence);
  },
);

testNeeding(
  missing([PROM, [HAPROXY_BIN, 'haproxy']]),
  'web on HAProxy: 5xx from its servers, its frontend at maxconn, and 503s it makes itself once every server is down, each told apart',
  async (t) => {
    const s1 = await startBackend(t);
    const s2 = await startBackend(t);
    const hap = await startHaproxy(t, { servers: { s1: s1.target, s2: s2.target }, maxconn: 10 });
    const prom = await startPrometheus(t, { jobs: [{ job: 'lb', targets: [hap.metrics] }] });
    const traffic = { on: true };
    t.teardown(() => void (traffic.on = false));
    void (async () => {
      while (traffic.on) {
        try {
          await (await fetch(`http://${hap.address}/work`, { signal: AbortSignal.timeout(3000) })).arrayBuffer();
        } catch {
          // refused, timed out or cut: the next request goes on
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    const lb = service('lb', [workload('job="lb"')], { technologies: ['haproxy'] });
    const short = { window: '10s' };
    const rate10s = (code: string) => `sum(rate(haproxy_server_http_responses_total{job="lb",code="${code}"}[10s]))`;
    const share10s = (metric: string) => `sum(rate(${metric}{job="lb",code="5xx"}[10s])) / sum(rate(${metric}{job="lb"}[10s]))`;
    await untilPrometheus(prom.base, rate10s('2xx'), (s) => (s[0]?.value ?? 0) > 1, 60_000);

    for (const id of ['web/backend-down', 'web/proxy-5xx', 'web/backend-5xx', 'web/connection-limit']) {
      const v = await check(prom.base, id, lb);
      t.is(v.verdict, 'ruled_out', `${id}: ${v.reason}`);
    }
    const servers = await check(prom.base, 'web/backend-down', lb);
    t.like(servers.evidence[0], { query: 'haproxy_server_status{job="lb",state="DOWN"}', observed: { servers: 2, down: 0 } });

    // s1 answers 500 to real requests while its health check passes: the servers fail, not the proxy.
    s1.status = 500;
    await untilPrometheus(prom.base, share10s('haproxy_server_http_responses_total'), (s) => (s[0]?.value ?? 0) > 0.25, 60_000);
    const fromApp = await check(prom.base, 'web/backend-5xx', lb, { settings: short });
    t.is(fromApp.verdict, 'holds', fromApp.reason);
    t.regex(fromApp.reason, /5xx answered by the servers behind HAProxy over 10s are above 5\.00 % for be_app/);
    t.deepEqual(fromApp.subjects, ['be_app']);
    const notProxy = await check(prom.base, 'web/proxy-5xx', lb, { settings: short });
    t.is(notProxy.verdict, 'ruled_out', notProxy.reason);
    await rerunnable(t, prom.base, [...fromApp.evidence, ...notProxy.evidence]);
    s1.status = 200;

    // Ten idle connections fill fe_web's maxconn of 10.
    const sockets: Socket[] = [];
    const [host, port] = hap.address.split(':');
    for (let i = 0; i < 10; i++) sockets.push(connect(Number(port), host!).on('error', () => undefined));
    t.teardown(() => sockets.forEach((s) => s.destroy()));
    await untilPrometheus(prom.base, 'haproxy_frontend_current_sessions{job="lb",proxy="fe_web"}', (s) => (s[0]?.value ?? 0) >= 10, 60_000);
    const full = await check(prom.base, 'web/connection-limit', lb);
    t.is(full.verdict, 'holds', full.reason);
    t.regex(full.reason, /frontend fe_web reached 100\.0 % of its maxconn/);
    sockets.forEach((s) => s.destroy());

    // Every server stopped: HAProxy's checks mark them DOWN and it answers 503 itself.
    await Promise.all([s1.stop(), s2.stop()]);
    await untilPrometheus(prom.base, 'haproxy_server_status{job="lb",state="DOWN"} == 1', (s) => s.length === 2, 60_000);
    const gone = await check(prom.base, 'web/backend-down', lb);
    t.is(gone.verdict, 'holds', gone.reason);
    t.regex(gone.reason, /2 of 2 HAProxy servers are DOWN by its health checks \(be_app\/s1, be_app\/s2\), leaving be_app with no server/);
    t.true(gone.subjects?.includes('be_app'), 'the backend is a subject, as for web/proxy-5xx which it explains');
    await untilPrometheus(prom.base, share10s('haproxy_backend_http_responses_total'), (s) => (s[0]?.value ?? 0) > 0.5, 60_000);
    await untilPrometheus(prom.base, 'sum(rate(haproxy_server_http_responses_total{job="lb"}[10s]))', (s) => s[0]?.value === 0, 60_000);
    const made = await check(prom.base, 'web/proxy-5xx', lb, { settings: short });
    t.is(made.verdict, 'holds', made.reason);
    t.regex(made.reason, /the proxy answers these itself/);
    await rerunnable(t, prom.base, made.evidence);
    const none = await check(prom.base, 'web/backend-5xx', lb, { settings: short });
    t.like(none, { verdict: 'unknown', obstacle: "the data isn't there" }, 'no server answered anything in the window');
  },
);
