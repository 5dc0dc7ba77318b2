// ctx.http, the host's HTTP client for connectors (host/plugins/http-client.ts): auth, no
// redirects, the body cap, timeouts and the host's cut-off, and problems scrubbed of secrets.
import test, { type ExecutionContext } from 'ava';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pluginHttp } from '../../host/plugins/http-client.ts';

async function server(t: ExecutionContext, handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const srv = createServer(handle);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))));
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
}

test('basic and bearer auth are sent; auth replaces an authorization header given', async (t) => {
  const base = await server(t, (req, res) => res.end(req.headers.authorization ?? 'none'));
  const http = pluginHttp({ settings: {}, secrets: [] });
  t.like(await http.request({ url: `${base}/a`, auth: { basic: { username: 'u', password: 'p' } } }), {
    ok: true,
    status: 200,
    text: `Basic ${Buffer.from('u:p').toString('base64')}`,
  });
  t.like(await http.request({ url: `${base}/a`, headers: { Authorization: 'Token x' }, auth: { bearer: 'tok' } }), { ok: true, text: 'Bearer tok' });
  t.like(
    await http.request({
      url: `${base}/a`,
      query: [
        ['q', 'a b'],
        ['q', 'c'],
      ],
    }),
    { ok: true, where: `${base}/a` },
  );
});

test('answers are asked for uncompressed, unless the request names its own accept-encoding', async (t) => {
  const base = await server(t, (req, res) => res.end(req.headers['accept-encoding'] ?? 'none'));
  const http = pluginHttp({ settings: {}, secrets: [] });
  t.like(await http.request({ url: base }), { ok: true, text: 'identity' });
  t.like(await http.request({ url: base, headers: { 'Accept-Encoding': 'gzip' } }), { ok: true, text: 'gzip' });
});

test('a redirect is answered as is, never followed', async (t) => {
  let followed = false;
  const base = await server(t, (req, res) =>
    req.url === '/there' ? ((followed = true), res.end('x')) : (res.writeHead(302, { location: '/there' }), res.end()),
  );
  const r = await pluginHttp({ settings: {}, secrets: [] }).request({ url: `${base}/here` });
  t.like(r, { ok: true, status: 302, headers: { location: '/there' } });
  t.false(followed);
});

test('the body is read up to maxBodyBytes and marked truncated beyond', async (t) => {
  const base = await server(t, (_req, res) => res.end('a'.repeat(5000)));
  const http = pluginHttp({ settings: {}, secrets: [] });
  const cut = await http.request({ url: base, maxBodyBytes: 1000 });
  t.like(cut, { ok: true, truncated: true });
  t.is(cut.ok && cut.text.length, 1000);
  t.like(await http.request({ url: base, maxBodyBytes: 5000 }), { ok: true, truncated: false });
});

test('a request gives up at timeoutS, else at the timeout_s setting, and at once when the host aborts', async (t) => {
  const base = await server(t, () => {}); // never answers
  const first = await pluginHttp({ settings: {}, secrets: [] }).request({ url: `${base}/slow?k=v`, timeoutS: 0.2 });
  t.like(first, { ok: false, problem: `no answer from ${base}/slow within 0.2 s`, failure: 'timeout' });
  t.true(!first.ok && first.took_ms !== undefined && first.took_ms >= 150, 'it took its timeout');
  t.like(await pluginHttp({ settings: { timeout_s: 0.3 }, secrets: [] }).request({ url: `${base}/slow` }), {
    ok: false,
    problem: `no answer from ${base}/slow within 0.3 s`,
    failure: 'timeout',
  });
  const abort = new AbortController();
  const pending = pluginHttp({ settings: { timeout_s: 60 }, signal: abort.signal, secrets: [] }).request({ url: `${base}/slow` });
  abort.abort();
  t.like(await pending, { ok: false });
});

test('a failure is said in words, names only the origin when asked, and never shows a secret', async (t) => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  const http = pluginHttp({ settings: {}, secrets: ['hook-token-0123456789'] });
  const refused = await http.request({ url: `http://127.0.0.1:${port}/x` });
  t.like(refused, { ok: false, problem: `cannot connect to 127.0.0.1:${port}: connection refused`, failure: 'refused' });
  t.true(!refused.ok && refused.took_ms !== undefined && refused.took_ms < 1000, 'a refusal is quick, and says how quick');
  t.like(await http.request({ url: 'http://no-such-host.invalid/x' }), { ok: false, problem: 'cannot resolve no-such-host.invalid', failure: 'unresolved' });
  const base = await server(t, () => {});
  const r = await http.request({ url: `${base}/hooks/hook-token-0123456789`, timeoutS: 0.2 });
  t.like(r, { ok: false, problem: `no answer from ${base}/hooks/[redacted] within 0.2 s` });
  t.like(await http.request({ url: `${base}/hooks/hook-token-0123456789`, timeoutS: 0.2, shown: 'origin' }), {
    ok: false,
    problem: `no answer from ${base} within 0.2 s`,
  });
  t.like(await http.request({ url: 'ftp://example.com/x' }), { ok: false, problem: 'the address must be http or https, not ftp', failure: 'invalid' });
});
