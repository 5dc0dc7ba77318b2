// The vendor's own test: it calls the plugin exactly as the host does (a context with a logger,
// validated settings, an abort signal and the host's HTTP client) against a local HTTP server.
// Everything of the host it needs comes from the contract module's test kit (connectorContext),
// so the folder tests alone against a checkout of the service version it targets.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { connectorContext } from '../../../host/plugins/contract.ts';
import plugin from '../index.ts';

const SUMMARY = {
  page: { id: 'p1', name: 'Acme Cloud' },
  status: { indicator: 'minor', description: 'Partially Degraded Service' },
  components: [
    { id: 'c1', name: 'API', status: 'operational' },
    { id: 'c2', name: 'Payments', status: 'major_outage', description: 'Card payments fail' },
    { id: 'c3', name: 'Search', status: 'degraded_performance' },
  ],
};

/** A local status page; `handle` answers each request. Closed after the test. */
async function statusPage(t: ExecutionContext, handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const srv = createServer(handle);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))));
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}/api/v2/summary.json`;
}

/** The host's context for these settings; the api_key is a secret the HTTP client's problems never show. */
const ctx = (settings: Record<string, unknown>, signal?: AbortSignal) =>
  connectorContext(settings, { signal, secrets: typeof settings.api_key === 'string' ? [settings.api_key] : [] });

const json = (res: ServerResponse, status: number, body: unknown) => (
  res.writeHead(status, { 'content-type': 'application/json' }),
  res.end(JSON.stringify(body))
);

test('test reads the page and reports what it found', async (t) => {
  const url = await statusPage(t, (_req, res) => json(res, 200, SUMMARY));
  const c = ctx({ url });
  t.deepEqual(await plugin.test(c), {
    ok: true,
    problem: null,
    found: { page: 'Acme Cloud', indicator: 'minor', description: 'Partially Degraded Service', components: 3 },
  });
  t.regex(c.lines[0]!, /status page read/);
});

test('the api_key is sent as OAuth, and a refused key is a problem that does not show it', async (t) => {
  const url = await statusPage(t, (req, res) =>
    req.headers.authorization === 'OAuth right-key-123' ? json(res, 200, SUMMARY) : json(res, 401, { error: 'nope' }),
  );
  t.true((await plugin.test(ctx({ url, api_key: 'right-key-123' }))).ok);
  const bad = await plugin.test(ctx({ url, api_key: 'wrong-key-456' }));
  t.deepEqual(bad, { ok: false, problem: 'the status page refused the api_key (HTTP 401)' });
});

test('a page that is not a status summary, or not there, is a problem', async (t) => {
  const url = await statusPage(t, (req, res) => (req.url === '/api/v2/summary.json' ? json(res, 200, { hello: 'world' }) : json(res, 404, {})));
  t.like(await plugin.test(ctx({ url })), { ok: false, problem: 'the answer is not a status summary (no page.name or status.indicator)' });
  t.like(await plugin.test(ctx({ url: url.replace('summary', 'nothing') })), { ok: false, problem: 'the status page answered HTTP 404' });
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  t.like(await plugin.test(ctx({ url: `http://127.0.0.1:${port}/x` })), { ok: false, problem: `cannot connect to 127.0.0.1:${port}: connection refused` });
});

test('a page that never answers is given up on at timeout_s, and at once when the host aborts', async (t) => {
  const url = await statusPage(t, () => {}); // never answers
  const started = Date.now();
  t.like(await plugin.test(ctx({ url, timeout_s: 0.3 })), { ok: false, problem: `no answer from ${url} within 0.3 s` });
  t.true(Date.now() - started < 3000);
  const abort = new AbortController();
  setTimeout(() => abort.abort(), 100);
  t.like(await plugin.test(ctx({ url, timeout_s: 10 }, abort.signal)), { ok: false });
});

test('pollAlerts answers a firing alert per component that is not operational', async (t) => {
  const url = await statusPage(t, (_req, res) => json(res, 200, SUMMARY));
  const alerts = await plugin.pollAlerts!(ctx({ url }));
  t.deepEqual(alerts, [
    {
      name: 'Payments major outage',
      severity: 'critical',
      status: 'firing',
      service: 'Payments',
      labels: { page: 'Acme Cloud', component: 'Payments', component_status: 'major_outage' },
      summary: 'Card payments fail',
      id: 'statuspage:p1:c2',
    },
    {
      name: 'Search degraded performance',
      severity: 'warning',
      status: 'firing',
      service: 'Search',
      labels: { page: 'Acme Cloud', component: 'Search', component_status: 'degraded_performance' },
      summary: '',
      id: 'statuspage:p1:c3',
    },
  ]);
});
