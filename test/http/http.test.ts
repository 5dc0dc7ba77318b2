import { createHash } from 'node:crypto';
import test from 'ava';
import { route } from '../../host/http/respond.ts';
import { ADMIN_TOKEN, INGEST_TOKEN, startApp } from '../helpers/app.ts';

test('unknown routes answer 404 not_found as JSON, also under /v1', async (t) => {
  const ta = await startApp(t);
  for (const path of ['/nope', '/v1/nope', '/v1/ledger/nope']) {
    const res = await ta.call('GET', path);
    t.is(res.status, 404, path);
    t.deepEqual(res.body, { error: 'not_found' }, path);
  }
});

test('a known path with the wrong method answers 405 method_not_allowed', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('DELETE', '/health');
  t.is(res.status, 405);
  t.deepEqual(res.body, { error: 'method_not_allowed' });
});

test('a body over 1 MiB answers 413 and writes nothing', async (t) => {
  const ta = await startApp(t);
  const big = JSON.stringify({ type: 'human.x', actor: 'a', reason: 'x'.repeat(1024 * 1024) });
  const res = await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: big });
  t.is(res.status, 413);
  t.is(res.body.error, 'payload_too_large');
  t.is((await ta.app.ledger.head()).seq, 0);
});

test('a body just under 1 MiB is read', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: { type: 'human.x', actor: 'a', data: { pad: 'x'.repeat(60_000) } } });
  t.is(res.status, 201);
});

test('malformed JSON answers 400 invalid_json, but only after the token is checked', async (t) => {
  const ta = await startApp(t);
  t.deepEqual((await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: '{"type":' })).body.error, 'invalid_json');
  t.deepEqual((await ta.call('POST', '/v1/events', { token: null, body: '{"type":' })).body, { error: 'unauthorized' });
});

test('a handler that throws answers 500 internal and the process keeps serving', async (t) => {
  const ta = await startApp(t);
  ta.app.server.get(
    '/test/throws',
    route(ta.app.log, async () => {
      throw new Error(`boom with ${ADMIN_TOKEN}`);
    }),
  );
  ta.app.server.get('/test/raw-throws', async () => {
    throw new Error('raw boom');
  });
  for (const path of ['/test/throws', '/test/raw-throws']) {
    const res = await ta.call('GET', path);
    t.is(res.status, 500, path);
    t.is(res.body.error, 'internal', path);
    t.false(JSON.stringify(res.body).includes('boom'), 'the cause is logged, not shown');
  }
  t.is((await ta.call('GET', '/health')).status, 200);
});

test('no token ever appears in the logs, whatever the requests carry', async (t) => {
  const ta = await startApp(t);
  await ta.call('GET', `/v1/ledger?q=${ADMIN_TOKEN}`);
  await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: { type: 'human.x', actor: 'a', data: { token: INGEST_TOKEN } } });
  await ta.call('POST', '/v1/login', { token: null, body: { token: ADMIN_TOKEN } });
  await ta.call('POST', '/v1/login', { token: null, body: { token: 'wrong-token-value' } });
  await ta.call('GET', '/v1/nope', { token: 'some-unknown-bearer' });
  const all = ta.logs.join('');
  t.true(ta.logs.length >= 5, 'requests were logged');
  for (const secret of [ADMIN_TOKEN, INGEST_TOKEN, 'wrong-token-value', 'some-unknown-bearer']) t.false(all.includes(secret), secret);
});

test('a generated admin token is handed out once, works as owner, and only its hash is stored', async (t) => {
  const first = await startApp(t, { env: { SERVICE_ADMIN_TOKEN: undefined }, keepStore: true });
  const token = first.app.adminTokenToPrint;
  t.truthy(token);
  t.true(Buffer.from(token!, 'base64url').length === 32, '256 bits');
  t.is((await first.call('GET', '/v1/ledger', { token })).status, 200);
  t.is((await first.call('GET', '/v1/ledger', { token: ADMIN_TOKEN })).status, 401);
  const row = await first.app.db('install').first();
  t.is(row.admin_token_hash, createHash('sha256').update(token!).digest('hex'));
  t.false(JSON.stringify(row).includes(token!));
  t.false(first.logs.join('').includes(token!));
  await first.app.close();
  const second = await startApp(t, { env: { SERVICE_ADMIN_TOKEN: undefined }, store: first.store });
  t.teardown(() => first.store.cleanup());
  t.is(second.app.adminTokenToPrint, null, 'printed only on the first start');
  t.is((await second.call('GET', '/v1/ledger', { token })).status, 200, 'the same token still works');
});

test('a bearer header in another scheme or with a near-miss token is refused', async (t) => {
  const ta = await startApp(t);
  for (const header of [`Basic ${ADMIN_TOKEN}`, `Bearer ${ADMIN_TOKEN}x`, `Bearer ${ADMIN_TOKEN.slice(0, -1)}`, 'Bearer', '']) {
    const res = await fetch(`${ta.base}/v1/ledger`, { headers: { authorization: header } });
    t.is(res.status, 401, header);
  }
});

// Issue 24: polls answered normally are logged at debug, everything else at info (the logger's
// own output, as the app writes it).
test('status polls, probes and scrapes are logged at debug; other requests and failed polls at info', async (t) => {
  const requestLines = (ta: Awaited<ReturnType<typeof startApp>>) =>
    ta.logs.map((l) => JSON.parse(l) as { level: number; msg: string; path?: string; status?: number }).filter((l) => l.msg === 'request');
  const ta = await startApp(t, { env: { SERVICE_LOG_LEVEL: 'debug' } });
  for (const path of ['/v1/status', '/v1/status', '/v1/live', '/health', '/health/ready']) t.true((await ta.call('GET', path)).status < 400, path);
  t.is((await ta.call('GET', '/v1/live', { token: null })).status, 401);
  t.is((await ta.call('GET', '/v1/ledger')).status, 200);
  // The logger writes each line after the answer is sent: wait for the last one.
  for (let i = 0; i < 500 && requestLines(ta).length < 7; i++) await new Promise((r) => setTimeout(r, 10));
  const lines = requestLines(ta);
  const level = (path: string, status: number) => lines.find((l) => l.path === path && l.status === status)?.level;
  for (const path of ['/v1/status', '/v1/live', '/health', '/health/ready']) t.is(level(path, 200), 20, `${path} at debug`);
  t.is(lines.filter((l) => l.path === '/v1/status' && l.level === 20).length, 2);
  t.is(level('/v1/live', 401), 30, 'a refused poll stays at info');
  t.is(level('/v1/ledger', 200), 30, 'any other request stays at info');

  // At the default level (info), a poll writes no line at all.
  const quiet = await startApp(t);
  for (let i = 0; i < 5; i++) t.is((await quiet.call('GET', '/v1/status')).status, 200);
  t.is((await quiet.call('GET', '/v1/ledger')).status, 200);
  for (let i = 0; i < 500 && !requestLines(quiet).some((l) => l.path === '/v1/ledger'); i++) await new Promise((r) => setTimeout(r, 10));
  t.deepEqual(
    requestLines(quiet).map((l) => l.path),
    ['/v1/ledger'],
  );
});
