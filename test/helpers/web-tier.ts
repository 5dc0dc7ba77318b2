// Debian's nginx (with prometheus-nginx-exporter reading its stub_status) and HAProxy (with its
// built-in Prometheus exporter) for a test, the eval or a benchmark: each on loopback ports of its
// own with its files in a temp dir, stopped and removed by its teardown. No test runtime in here.
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startDaemon, type Teardowns } from './daemon.ts';
import { freePort } from './wait.ts';

export const NGINX_BIN = process.env.NGINX_BIN?.trim() || '/usr/sbin/nginx';
export const NGINX_EXPORTER_BIN = process.env.NGINX_EXPORTER_BIN?.trim() || '/usr/bin/prometheus-nginx-exporter';
export const HAPROXY_BIN = process.env.HAPROXY_BIN?.trim() || '/usr/sbin/haproxy';

const answers = (url: string) => () =>
  fetch(url).then(
    (r) => r.ok,
    () => false,
  );

export interface RunningNginx {
  /** `127.0.0.1:<port>` that proxies to the upstreams. */
  address: string;
  /** stub_status, as prometheus-nginx-exporter scrapes it. */
  statusUrl: string;
}

/**
 * nginx in the foreground (one worker, `worker_connections` as given: listening sockets and
 * upstream connections count against it too) proxying `/` to `upstreams` (`host:port`), with
 * stub_status on a port of its own. Ports are chosen free unless given.
 */
export async function startNginx(
  t: Teardowns,
  o: { upstreams: string[]; workerConnections?: number; port?: number; statusPort?: number },
): Promise<RunningNginx> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-nginx-'));
  chmodSync(dir, 0o755); // the workers (nobody) keep their temp files here
  const port = o.port ?? (await freePort());
  const statusPort = o.statusPort ?? (await freePort());
  writeFileSync(
    path.join(dir, 'nginx.conf'),
    `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log stderr warn;
events { worker_connections ${o.workerConnections ?? 64}; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream backends { ${o.upstreams.map((u) => `server ${u} max_fails=1 fail_timeout=2s;`).join(' ')} }
  server { listen 127.0.0.1:${port}; location / { proxy_pass http://backends; proxy_next_upstream error timeout; } }
  server { listen 127.0.0.1:${statusPort}; location = /stub_status { stub_status; } }
}
`,
  );
  const statusUrl = `http://127.0.0.1:${statusPort}/stub_status`;
  await startDaemon(t, { name: 'nginx', bin: NGINX_BIN, args: ['-p', dir, '-c', path.join(dir, 'nginx.conf')], dir, base: '', ready: answers(statusUrl) });
  return { address: `127.0.0.1:${port}`, statusUrl };
}

/** prometheus-nginx-exporter reading `statusUrl`: answers its scrape target `127.0.0.1:<port>`. */
export async function startNginxExporter(t: Teardowns, statusUrl: string, port?: number): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-nginx-exporter-'));
  const p = port ?? (await freePort());
  const target = `127.0.0.1:${p}`;
  await startDaemon(t, {
    name: 'prometheus-nginx-exporter',
    bin: NGINX_EXPORTER_BIN,
    args: [`-nginx.scrape-uri=${statusUrl}`, `-web.listen-address=${target}`],
    dir,
    base: '',
    ready: answers(`http://${target}/metrics`),
  });
  return target;
}

export interface RunningHaproxy {
  /** The frontend `fe_web`: `127.0.0.1:<port>`. */
  address: string;
  /** The built-in exporter's scrape target (`/metrics`). */
  metrics: string;
}

/**
 * HAProxy in the foreground: frontend `fe_web` (maxconn `maxconn`) to backend `be_app` over
 * `servers` (`name` → `host:port`), health-checked with `GET <checkPath>` every 500 ms (down after
 * one failure, up after one success), and its built-in Prometheus exporter on a port of its own.
 */
export async function startHaproxy(
  t: Teardowns,
  o: {
    servers: Record<string, string>;
    maxconn?: number;
    checkPath?: string;
    port?: number;
    metricsPort?: number;
    /** Each answer says which server gave it (`X-Served-By`), and a refused connection is tried on another server. */
    serviceHosts?: boolean;
  },
): Promise<RunningHaproxy> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-haproxy-'));
  const port = o.port ?? (await freePort());
  const metricsPort = o.metricsPort ?? (await freePort());
  writeFileSync(
    path.join(dir, 'haproxy.cfg'),
    `global
  maxconn 200
defaults
  mode http
  timeout connect 1s
  timeout client 30s
  timeout server ${o.serviceHosts === true ? '30s' : '5s'}
frontend fe_web
  bind 127.0.0.1:${port}
  maxconn ${o.maxconn ?? 100}
  default_backend be_app
frontend prometheus
  bind 127.0.0.1:${metricsPort}
  http-request use-service prometheus-exporter if { path /metrics }
backend be_app
  option httpchk GET ${o.checkPath ?? '/health'}
  default-server check inter 500ms ${o.serviceHosts === true ? 'fall 3 rise 1\n  timeout check 5s' : 'fall 1 rise 1'}
${o.serviceHosts === true ? '  http-response set-header X-Served-By %s\n  option http-buffer-request\n  retries 3\n  option redispatch\n  retry-on conn-failure empty-response\n' : ''}${Object.entries(
      o.servers,
    )
      .map(([name, addr]) => `  server ${name} ${addr}`)
      .join('\n')}
`,
  );
  const metrics = `127.0.0.1:${metricsPort}`;
  await startDaemon(t, {
    name: 'haproxy',
    bin: HAPROXY_BIN,
    args: ['-db', '-f', path.join(dir, 'haproxy.cfg')],
    dir,
    base: '',
    ready: answers(`http://${metrics}/metrics`),
  });
  return { address: `127.0.0.1:${port}`, metrics };
}
