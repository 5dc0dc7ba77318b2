/**
 * One small service of the eval (`node test/eval/app.ts`), run as a process of its own so that a
 * restart is a real one. It serves `/api/work` and drives its own traffic there (a request every
 * 200 ms over real HTTP, so latencies are measured, not declared), `/health`, and `/metrics` in
 * the Prometheus text format with what a service instrumented by a client library exports:
 * `http_requests_total{method,route,code}`, the `http_request_duration_seconds` histogram (the
 * client libraries' default buckets) and `process_start_time_seconds`.
 *
 * Its behaviour (the fault) is `{error_ratio, latency_s, health_status, health_delay_s}`: read at
 * start from the JSON file EVAL_APP_CONFIG when set (the "deployed" version in the repository),
 * changed at run time with `POST /control` (a fault that is not a deploy). Errors are spread
 * evenly and deterministically (request n fails when ⌊n·ratio⌋ moves), so a 1-minute window sees
 * the ratio asked for and not a random draw around it.
 *
 * Environment: EVAL_APP_NAME, EVAL_APP_PORT, EVAL_APP_CONFIG (optional).
 */
import { readFileSync } from 'node:fs';
import { Agent, createServer, get, type IncomingMessage, type ServerResponse } from 'node:http';

interface Mode {
  error_ratio: number;
  latency_s: number;
  health_status: number;
  health_delay_s: number;
}

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const EVERY_MS = 200;
const name = process.env.EVAL_APP_NAME ?? 'app';
const port = Number(process.env.EVAL_APP_PORT);
const started = performance.timeOrigin / 1000;

const mode: Mode = { error_ratio: 0, latency_s: 0, health_status: 200, health_delay_s: 0 };
const file = process.env.EVAL_APP_CONFIG;
if (file !== undefined && file !== '') Object.assign(mode, JSON.parse(readFileSync(file, 'utf8')) as Partial<Mode>);

const requests = new Map<string, number>();
const buckets = BUCKETS.map(() => 0);
let observed = 0;
let sum = 0;
let served = 0;

function observe(code: number, seconds: number): void {
  requests.set(String(code), (requests.get(String(code)) ?? 0) + 1);
  BUCKETS.forEach((le, i) => {
    if (seconds <= le) buckets[i]!++;
  });
  observed++;
  sum += seconds;
}

function metrics(): string {
  const labels = 'method="GET",route="/api/work"';
  const lines = [
    '# HELP http_requests_total Requests served, by status code.',
    '# TYPE http_requests_total counter',
    ...[...requests].map(([code, n]) => `http_requests_total{${labels},code="${code}"} ${n}`),
    '# HELP http_request_duration_seconds Time to serve a request.',
    '# TYPE http_request_duration_seconds histogram',
    ...BUCKETS.map((le, i) => `http_request_duration_seconds_bucket{${labels},le="${le}"} ${buckets[i]}`),
    `http_request_duration_seconds_bucket{${labels},le="+Inf"} ${observed}`,
    `http_request_duration_seconds_sum{${labels}} ${sum}`,
    `http_request_duration_seconds_count{${labels}} ${observed}`,
    '# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.',
    '# TYPE process_start_time_seconds gauge',
    `process_start_time_seconds ${started}`,
  ];
  return `${lines.join('\n')}\n`;
}

function work(res: ServerResponse): void {
  const t0 = performance.now();
  served++;
  const fails = Math.floor(served * mode.error_ratio) !== Math.floor((served - 1) * mode.error_ratio);
  setTimeout(() => {
    const code = fails ? 500 : 200;
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(fails ? '{"error":"internal"}' : '{"ok":true}');
    observe(code, (performance.now() - t0) / 1000);
  }, mode.latency_s * 1000);
}

function control(req: IncomingMessage, res: ServerResponse): void {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString('utf8')));
  req.on('end', () => {
    Object.assign(mode, JSON.parse(body) as Partial<Mode>);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(mode));
  });
}

const server = createServer((req, res) => {
  const url = req.url ?? '/';
  if (url === '/metrics') {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(metrics());
  } else if (url === '/api/work') work(res);
  else if (url === '/health')
    setTimeout(() => {
      res.writeHead(mode.health_status, { 'content-type': 'text/plain' });
      res.end(mode.health_status < 300 ? `${name} ok\n` : `${name} unhealthy\n`);
    }, mode.health_delay_s * 1000);
  else if (url === '/control' && req.method === 'POST') control(req, res);
  else {
    res.writeHead(404);
    res.end();
  }
});

const agent = new Agent({ keepAlive: true, maxSockets: 64 });
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`${name} listening on ${port}\n`);
  setInterval(() => {
    get({ host: '127.0.0.1', port, path: '/api/work', agent }, (r) => r.resume()).on('error', () => undefined);
  }, EVERY_MS).unref();
});
process.on('SIGTERM', () => process.exit(0));
