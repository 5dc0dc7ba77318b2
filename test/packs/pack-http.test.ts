// The http pack against a real HTTP server (node:http) that goes down and up: http/endpoint-down
// GETs the health URL through the host's plugin HTTP client (pluginHttp) in a real check context.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { checkInputs, loadPack, runLive } from '../helpers/pack-readers.ts';

const AT = '2026-11-24T09:00:00.000Z';

type Mode = 'up' | 'slow' | 'down' | 'hang' | 'redirect';

/** A health endpoint whose answer the test switches: 200 (at once or after 0.8 s), 503, a redirect, or no answer at all. */
async function healthServer(t: ExecutionContext): Promise<{ url: string; set(m: Mode): void; server: Server }> {
  let mode: Mode = 'up';
  const server = createServer((req, res) => {
    if (mode === 'hang') return; // keeps the connection open and never answers
    if (mode === 'redirect') return void (res.writeHead(302, { location: '/login' }), res.end());
    if (mode === 'slow') return void setTimeout(() => (res.writeHead(200), res.end('{"status":"ok","slow":true}')), 800);
    res.writeHead(mode === 'up' ? 200 : 503, { 'content-type': 'application/json' });
    res.end(mode === 'up' ? '{"status":"ok"}' : '{"status":"down","reason":"database unreachable"}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/health`, set: (m) => (mode = m), server };
}

async function endpointDown(t: ExecutionContext) {
  const causes = await loadPack(t, 'http');
  t.deepEqual([...causes.keys()], ['http/endpoint-down']);
  return causes.get('http/endpoint-down')!;
}

test('endpoint-down: a 2xx rules it out, a 503 holds, and up again rules it out', async (t) => {
  const cause = await endpointDown(t);
  const h = await healthServer(t);
  const inputs = checkInputs(AT, { service: { health_url: h.url } });

  const up = await runLive(cause, inputs);
  t.is(up.verdict, 'ruled_out', up.reason);
  t.regex(up.reason, /^The health URL of orders answered 200 in \d+ ms \(within 5 s\)\.$/);
  t.like(up.evidence[0], { source: 'health_url', kind: 'http', query: `GET ${h.url}`, observed: { status: 200, excerpt: '{"status":"ok"}' } });
  t.true(typeof (up.evidence[0]!.observed as { took_ms: unknown }).took_ms === 'number');

  h.set('down');
  const down = await runLive(cause, inputs);
  t.is(down.verdict, 'holds', down.reason);
  t.is(down.reason, 'The health URL of orders answered 503, not 2xx.');
  t.like(down.evidence[0], { observed: { status: 503, excerpt: '{"status":"down","reason":"database unreachable"}' } });
  t.regex(down.evidence[0]!.excerpt, /answered 503 in \d+ ms: \{"status":"down"/);
  t.deepEqual(down.verification, { cause: 'http/endpoint-down', expect: 'ruled_out' });
  t.is(down.remedy, null);

  h.set('up');
  t.is((await runLive(cause, inputs)).verdict, 'ruled_out');

  h.set('redirect');
  const moved = await runLive(cause, inputs);
  t.is(moved.verdict, 'holds');
  t.is(moved.reason, 'The health URL of orders answered 302, not 2xx (a redirect, which is not followed).');
});

test('endpoint-down: no answer within the timeout holds (a slow 2xx inside it does not), and so does a refused connection', async (t) => {
  const cause = await endpointDown(t);
  const h = await healthServer(t);
  h.set('hang');
  const hang = await runLive(cause, checkInputs(AT, { service: { health_url: h.url }, overrides: { 'http/endpoint-down': { timeout_s: 1 } } }));
  t.is(hang.verdict, 'holds', hang.reason);
  t.is(hang.reason, `The health URL of orders got no answer within 1 s: no answer from ${h.url} within 1 s.`);
  t.like(hang.evidence[0], { observed: { failure: 'timeout' } });
  const took = (hang.evidence[0]!.observed as { took_ms: number }).took_ms;
  t.true(took >= 950 && took < 5000, `cut off after the service's own timeout (${took} ms)`);

  h.set('slow');
  // 3 s: the server and the check's timer run in this one process, and a stall of 0.2 s on a
  // loaded machine would let a 1 s timer fire before the 0.8 s answer is read.
  const slow = await runLive(cause, checkInputs(AT, { service: { health_url: h.url }, overrides: { 'http/endpoint-down': { timeout_s: 3 } } }));
  t.is(slow.verdict, 'ruled_out', `near miss: a 200 after 0.8 s is inside the timeout (${slow.reason})`);
  t.true((slow.evidence[0]!.observed as { took_ms: number }).took_ms >= 750);

  // A fresh server, closed before any request: no pooled connection of the client to it.
  const gone = await healthServer(t);
  await new Promise<void>((r) => (gone.server.closeAllConnections(), gone.server.close(() => r())));
  const refused = await runLive(cause, checkInputs(AT, { service: { health_url: gone.url } }));
  t.is(refused.verdict, 'holds');
  // A refusal is said as what it is, with the time it really took, never as a timeout.
  t.regex(refused.reason, /refused the connection after \d+ ms: cannot connect to 127\.0\.0\.1:\d+: connection refused\.$/);
  t.notRegex(refused.reason, /timeout|within/);
  t.like(refused.evidence[0], { observed: { status: null, failure: 'refused' } });
  t.true((refused.evidence[0]!.observed as { took_ms: number }).took_ms < 1000, 'a refusal takes milliseconds, not the 5 s timeout');
});

test('endpoint-down: a service without a health URL (or with one that is not http) is unknown: the data is not there', async (t) => {
  const cause = await endpointDown(t);
  const none = await runLive(cause, checkInputs(AT));
  t.is(none.verdict, 'unknown');
  t.is(none.obstacle, "the data isn't there");
  t.is(none.reason, 'The estate gives orders no health URL: add health_url to its entry.');
  const ftp = await runLive(cause, checkInputs(AT, { service: { health_url: 'ftp://orders.internal/health' } }));
  t.is(ftp.verdict, 'unknown');
  t.is(ftp.obstacle, "the data isn't there");
});
