import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import test from 'ava';
import type { Request } from 'restify';
import { MAX_BODY_BYTES, readJson } from '../../host/http/body.ts';
import { ADMIN_TOKEN, INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';

/** Every route the server has, with sample values in its path parameters. */
function routesOf(ta: TestApp): Array<{ method: string; path: string }> {
  const routes = ta.app.server.router.getRoutes() as unknown as Record<string, { method: string; path: string }>;
  return Object.values(routes)
    .filter((r) => r.path.startsWith('/v1') || r.path === '/health')
    .map((r) => ({
      method: r.method,
      path: r.path.replace(/:([a-z_]+)/gi, (_, name: string) => (name === 'email' ? 'someone%40bank.example' : name === 'source' ? 'generic' : 'x1')),
    }));
}

/** Sends raw bytes on a fresh connection; resolves with what came back when the server closes or after `waitMs`. */
function raw(ta: TestApp, bytes: Buffer | string, opts: { endAfterWrite?: boolean; waitMs?: number } = {}): Promise<string> {
  const url = new URL(ta.base);
  return new Promise((resolve) => {
    let out = '';
    const s = connect(Number(url.port), url.hostname, () => {
      s.write(bytes);
      if (opts.endAfterWrite !== false) s.end();
    });
    const done = () => resolve(out);
    s.on('data', (d) => (out += d.toString()));
    s.on('close', done);
    s.on('error', done);
    s.setTimeout(opts.waitMs ?? 2000, () => s.destroy());
  });
}

async function alive(t: { is: (a: unknown, b: unknown, m?: string) => void }, ta: TestApp, what: string): Promise<void> {
  const res = await fetch(`${ta.base}/health`);
  t.is(res.status, 200, `the process answers after ${what}`);
}

const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20)); // 64 MiB of spaces, ~64 KiB on the wire

const framings: Array<{ name: string; headers: Record<string, string>; body: Buffer }> = [
  { name: 'a gzip header on a plain body', headers: { 'content-encoding': 'gzip' }, body: Buffer.from('x') },
  { name: 'broken deflate', headers: { 'content-encoding': 'deflate' }, body: Buffer.from('not deflate at all') },
  { name: 'broken brotli', headers: { 'content-encoding': 'br' }, body: Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x02]) },
  { name: 'a truncated gzip stream', headers: { 'content-encoding': 'gzip' }, body: gzipSync(Buffer.from('{"type":"human.x","actor":"a"}')).subarray(0, 12) },
  { name: 'a gzip bomb', headers: { 'content-encoding': 'gzip' }, body: bomb },
  { name: 'an unknown encoding', headers: { 'content-encoding': 'zstd' }, body: Buffer.from('{}') },
  { name: 'bytes that are not UTF-8', headers: {}, body: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]) },
  {
    name: 'a lone surrogate',
    headers: {},
    body: Buffer.from('{"type":"human.x","actor":"a\\ud800b","reason":"x\\udc00","by":"x\\ud800","email":"a\\ud800@b.example","data":{"k":"\\ud800"}}'),
  },
  {
    name: 'JSON nested 10,000 deep',
    headers: {},
    body: Buffer.from(`{"data":${'['.repeat(10_000)}${']'.repeat(10_000)},"settings":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`),
  },
  { name: 'a __proto__ key', headers: {}, body: Buffer.from('{"__proto__":{"admin":true},"type":"human.x","actor":"a","data":{"__proto__":{"x":1}}}') },
  { name: 'JSON null', headers: {}, body: Buffer.from('null') },
];

test('every malformed framing to every route, with and without a token, is answered and the process keeps serving', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const routes = routesOf(ta);
  t.true(routes.length >= 40, `found ${routes.length} routes`);
  for (const token of [null, ADMIN_TOKEN, INGEST_TOKEN]) {
    for (const f of framings) {
      for (const r of routes) {
        const headers: Record<string, string> = { 'content-type': 'application/json', ...f.headers };
        if (token !== null) headers.authorization = `Bearer ${token}`;
        // Redirects are not followed: the browser flows of single sign-on answer 302 by design.
        const res = await fetch(ta.base + r.path, { method: r.method, headers, body: r.method === 'GET' ? undefined : f.body, redirect: 'manual' });
        const text = await res.text();
        t.true(res.status < 500 || res.status === 503, `${f.name} → ${r.method} ${r.path} answered ${res.status} ${text}`);
        if (text !== '' && !(res.status >= 300 && res.status < 400)) t.notThrows(() => JSON.parse(text), `${r.method} ${r.path} answers JSON`);
      }
    }
    await alive(t, ta, `the framings with token ${String(token).slice(0, 5)}`);
  }
  t.true((await ta.call('GET', '/v1/ledger/verify')).body.ok, 'the ledger still verifies');
});

test('a gzip header on a body that is not gzip, before any token, is 400 and the process lives (was a crash)', async (t) => {
  const ta = await startApp(t);
  const res = await fetch(`${ta.base}/v1/login`, { method: 'POST', headers: { 'content-encoding': 'gzip' }, body: 'x' });
  t.is(res.status, 400);
  t.like(await res.json(), { error: 'invalid_body' });
  await alive(t, ta, 'a bad gzip body');
});

test('the body limit holds after decompression, for gzip, deflate and brotli', async (t) => {
  const ta = await startApp(t);
  const over = Buffer.from(JSON.stringify({ type: 'human.x', actor: 'a', reason: 'x'.repeat(MAX_BODY_BYTES) }));
  for (const [encoding, bytes] of [
    ['gzip', gzipSync(over)],
    ['deflate', deflateSync(over)],
    ['br', brotliCompressSync(over)],
  ] as const) {
    t.true(bytes.length < MAX_BODY_BYTES / 10, 'small on the wire');
    const res = await fetch(`${ta.base}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-encoding': encoding },
      body: bytes,
    });
    t.is(res.status, 413, encoding);
  }
  const bombed = await fetch(`${ta.base}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-encoding': 'gzip' },
    body: bomb,
  });
  t.is(bombed.status, 413);
  t.is((await ta.app.ledger.head()).seq, 0, 'nothing written');
});

test('a compressed body within the limit is read like a plain one', async (t) => {
  const ta = await startApp(t);
  const body = Buffer.from(JSON.stringify({ type: 'human.deploy', actor: 'ci', reason: 'zipped' }));
  for (const [encoding, bytes] of [
    ['gzip', gzipSync(body)],
    ['deflate', deflateSync(body)],
    ['br', brotliCompressSync(body)],
    ['identity', body],
  ] as const) {
    const res = await fetch(`${ta.base}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-encoding': encoding },
      body: bytes,
    });
    t.is(res.status, 201, encoding);
  }
});

test('an encoding the server does not take is 415', async (t) => {
  const ta = await startApp(t);
  const res = await fetch(`${ta.base}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${INGEST_TOKEN}`, 'content-encoding': 'zstd' },
    body: '{}',
  });
  t.is(res.status, 415);
  t.like(await res.json(), { error: 'unsupported_media_type' });
});

test('the 1 MiB limit is exact: 1 MiB - 1 byte is read, 1 MiB + 1 byte is 413, declared or chunked', async (t) => {
  const ta = await startApp(t);
  const sized = (n: number) => {
    const head = '{"type":"human.x","actor":"a","reason":"';
    const tail = '"}';
    return Buffer.from(head + 'x'.repeat(n - head.length - tail.length) + tail);
  };
  for (const chunked of [false, true]) {
    for (const [n, expect] of [
      [MAX_BODY_BYTES - 1, 400],
      [MAX_BODY_BYTES, 400],
      [MAX_BODY_BYTES + 1, 413],
    ] as const) {
      const body = sized(n);
      t.is(body.length, n);
      const stream = chunked ? new ReadableStream({ start: (c) => (c.enqueue(body), c.close()) }) : body;
      const res = await fetch(`${ta.base}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${INGEST_TOKEN}` },
        body: stream,
        duplex: 'half',
      } as RequestInit);
      const answer = (await res.json()) as { error: string; message?: string };
      // Read whole and parsed: refused by the ledger's 4000-character reason, not by size.
      t.is(res.status, expect, `${n} bytes${chunked ? ' chunked' : ''}: ${JSON.stringify(answer)}`);
      if (expect === 400) t.regex(answer.message ?? '', /reason/);
    }
  }
});

test('a caller that is not allowed in never has its body read: a 2 MB body with a wrong ingest token is 401', async (t) => {
  const ta = await startApp(t);
  const big = 'x'.repeat(2 * 1024 * 1024);
  for (const path of ['/v1/events', '/v1/alerts/generic']) {
    const res = await fetch(ta.base + path, { method: 'POST', headers: { authorization: 'Bearer wrong-ingest-token-000000000000' }, body: big });
    t.is(res.status, 401, path);
    t.is(res.headers.get('connection'), 'close', 'the unread body is not drained: the connection closes');
  }
  const admin = await fetch(`${ta.base}/v1/policy`, { method: 'PUT', headers: { authorization: 'Bearer nope' }, body: big });
  t.is(admin.status, 401);
});

test('a truncated chunked body, a content-length that lies and a slow body neither crash nor block the server', async (t) => {
  const ta = await startApp(t);
  const head = (extra: string) => `POST /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${INGEST_TOKEN}\r\n${extra}\r\n`;
  await raw(ta, head('Transfer-Encoding: chunked\r\n') + '10\r\n{"type":"hum');
  await raw(ta, head('Content-Length: 500\r\n') + '{"type":"human.x"');
  await raw(ta, head('Content-Length: 5\r\n') + '{"type":"human.x","actor":"a"}');
  await raw(ta, head('Transfer-Encoding: chunked\r\n') + 'zz\r\nnot hex\r\n0\r\n\r\n');
  // A slow body holds its own connection only: others are answered meanwhile.
  const slow = raw(ta, head('Content-Length: 1000\r\n') + '{"type":', { endAfterWrite: false, waitMs: 1500 });
  for (let i = 0; i < 5; i++) await alive(t, ta, 'a slow body on another connection');
  await slow;
  await alive(t, ta, 'the framings');
  t.is((await ta.app.ledger.head()).seq, 0, 'nothing half-written');
});

test('a body that does not arrive in time is refused with 408', async (t) => {
  const req = new PassThrough() as unknown as Request & PassThrough;
  (req as unknown as { headers: Record<string, string> }).headers = { 'content-length': '100' };
  req.write('{"a":');
  const err = await t.throwsAsync(readJson(req, { timeoutMs: 50 }));
  t.like(err, { code: 'request_timeout', status: 408 });
});

/** A request whose body Node has received whole (`complete`), as a route that awaited something finds it; its `end` not emitted yet. */
function receivedWhole(body: Buffer | string): Request {
  const req = new PassThrough();
  req.write(body);
  Object.assign(req, { complete: true, headers: {} });
  return req as unknown as Request;
}

test('a body already received whole is read at once, waiting for nothing, with the same limits and answers', async (t) => {
  // timeoutMs 1: a reader that waited for the end of the body would answer 408.
  t.deepEqual(await readJson(receivedWhole('{"a":[1,"ü"]}'), { timeoutMs: 1 }), { a: [1, 'ü'] });
  t.is(await readJson(receivedWhole(''), { timeoutMs: 1 }), undefined);
  t.like(await t.throwsAsync(readJson(receivedWhole(Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d])), { timeoutMs: 1 })), {
    code: 'invalid_body',
    status: 400,
  });
  t.like(await t.throwsAsync(readJson(receivedWhole('{"a":'), { timeoutMs: 1 })), { code: 'invalid_json', status: 400 });
  t.like(await t.throwsAsync(readJson(receivedWhole('{"a":"\\ud800"}'), { timeoutMs: 1 })), { code: 'invalid_body', status: 400 });
  t.like(await t.throwsAsync(readJson(receivedWhole(`"${'x'.repeat(20)}"`), { timeoutMs: 1, maxBytes: 21 })), { code: 'payload_too_large', status: 413 });
  t.is(await readJson(receivedWhole(`"${'x'.repeat(19)}"`), { timeoutMs: 1, maxBytes: 21 }), 'x'.repeat(19));
});

test('HEAD is answered as GET without a body', async (t) => {
  const ta = await startApp(t);
  const health = await fetch(`${ta.base}/health`, { method: 'HEAD' });
  t.is(health.status, 200);
  t.is(await health.text(), '');
  t.is((await fetch(`${ta.base}/v1/status`, { method: 'HEAD' })).status, 200);
  t.is((await fetch(`${ta.base}/v1/ledger`, { method: 'HEAD' })).status, 401);
  t.is((await fetch(`${ta.base}/v1/ledger`, { method: 'HEAD', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status, 200);
});

test('unknown query parameters answer 400 naming them; a huge limit is clamped like any other', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const typo = await ta.call('GET', '/v1/episodes?q=service:payments');
  t.is(typo.status, 400);
  t.is(typo.body.error, 'invalid_parameter');
  t.regex(typo.body.message, /\bq\b/);
  t.is((await ta.call('GET', '/v1/ledger?typ=human.')).status, 400);
  t.is((await ta.call('GET', '/v1/status?verbose=1')).status, 400);
  t.is((await ta.call('GET', '/v1/ledger?q=x&type=human.')).status, 200);
  for (const path of ['/v1/ledger', '/v1/episodes', '/v1/approvals']) {
    const res = await ta.call('GET', `${path}?limit=99999999999999999999`);
    t.is(res.status, 200, path);
  }
  t.is((await ta.call('GET', '/v1/ledger?limit=0')).status, 400);
  t.is((await ta.call('GET', '/v1/ledger?limit=-1')).status, 400);
});
