import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import test, { type ExecutionContext } from 'ava';
import { build } from 'vite';
import { CONSOLE_CSP, consoleRoutes, fileUnder } from '../../host/http/console.ts';
import { createServer } from '../../host/http/server.ts';
import { silentLogger } from '../../host/log.ts';
import { startApp } from '../helpers/app.ts';

const WEB = fileURLToPath(new URL('../../web/', import.meta.url));
const IMMUTABLE = 'public, max-age=31536000, immutable';
const JS_BUDGET_GZIP = 150 * 1024;

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request sent as written: fetch would normalise `..` away before it left. */
function raw(base: string, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Raw> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The console build of today's sources, once for the whole file, in a temporary folder. */
let built: Promise<string> | null = null;
let parent: string | null = null;
test.after.always(() => {
  if (parent !== null) rmSync(parent, { recursive: true, force: true });
});
function buildConsole(): Promise<string> {
  built ??= (async () => {
    parent = mkdtempSync(join(tmpdir(), 'oncall-console-'));
    const outDir = join(parent, 'dist');
    // Outside the build: what traversal would reach for.
    writeFileSync(join(parent, 'secret.txt'), 'TOP SECRET');
    // ava sets NODE_ENV=test, which would make Vite and Svelte build for development: measure
    // what `npm run build:web` ships. Nothing in the host reads NODE_ENV.
    const env = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      await build({ configFile: join(WEB, 'vite.config.ts'), mode: 'production', logLevel: 'silent', build: { outDir, emptyOutDir: true } });
    } finally {
      if (env === undefined) delete process.env.NODE_ENV;
      else process.env.NODE_ENV = env;
    }
    return outDir;
  })();
  return built;
}

/** The one HTTP server with the console in front, serving `dir`. */
async function serve(t: ExecutionContext, dir: string): Promise<string> {
  const server = createServer(silentLogger());
  consoleRoutes(server, { dir });
  server.get('/v1/ping', (_req, res, next) => {
    res.send(200, { pong: true });
    next();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test('the built console: index.html at / and at a deep link, no-cache, with the CSP', async (t) => {
  const base = await serve(t, await buildConsole());
  for (const path of ['/', '/sign-in', '/setup?x=1', '/some/deep/link']) {
    const res = await fetch(base + path, { headers: { Accept: 'text/html,application/xhtml+xml' } });
    t.is(res.status, 200, path);
    t.is(res.headers.get('content-type'), 'text/html; charset=utf-8', path);
    t.is(res.headers.get('cache-control'), 'no-cache', path);
    t.is(res.headers.get('content-security-policy'), CONSOLE_CSP, path);
    const html = await res.text();
    t.regex(html, /<script type="module" crossorigin src="\/assets\/index-[\w-]+\.js"><\/script>/, path);
    t.false(/<script(?![^>]*\bsrc=)[^>]*>/.test(html), 'no inline script');
  }
  t.regex(CONSOLE_CSP, /default-src 'self'/);
  t.notRegex(CONSOLE_CSP, /unsafe-inline|unsafe-eval/);
});

test('hashed assets: immutable for a year, with their content types; a missing one is a JSON 404', async (t) => {
  const dir = await buildConsole();
  const base = await serve(t, dir);
  const files = readdirSync(join(dir, 'assets'));
  const js = files.find((f) => f.endsWith('.js'));
  const css = files.find((f) => f.endsWith('.css'));
  t.truthy(js);
  t.truthy(css);
  for (const [file, type] of [
    [js, 'text/javascript; charset=utf-8'],
    [css, 'text/css; charset=utf-8'],
  ] as const) {
    const res = await fetch(`${base}/assets/${file}`);
    t.is(res.status, 200, file);
    t.is(res.headers.get('content-type'), type, file);
    t.is(res.headers.get('cache-control'), IMMUTABLE, file);
    t.is(res.headers.get('x-content-type-options'), 'nosniff');
    t.is(await res.text(), readFileSync(join(dir, 'assets', file!), 'utf8'));
    const again = await fetch(`${base}/assets/${file}`, { headers: { 'If-None-Match': res.headers.get('etag')! } });
    t.is(again.status, 304);
  }
  const head = await raw(base, `/assets/${js}`, {}, 'HEAD');
  t.is(head.status, 200);
  t.is(head.body, '');
  const missing = await fetch(`${base}/assets/index-nothere.js`);
  t.is(missing.status, 404);
  t.deepEqual(await missing.json(), { error: 'not_found' });
});

test('/favicon.ico answers an icon, linked from index.html', async (t) => {
  const dir = await buildConsole();
  const base = await serve(t, dir);
  for (const method of ['GET', 'HEAD']) {
    const res = await fetch(`${base}/favicon.ico`, { method });
    t.is(res.status, 200, method);
    t.is(res.headers.get('content-type'), 'image/x-icon', method);
    if (method === 'GET') {
      const body = Buffer.from(await res.arrayBuffer());
      t.deepEqual([...body.subarray(0, 4)], [0, 0, 1, 0], 'an ICO header');
      t.deepEqual(body, readFileSync(join(WEB, 'public', 'favicon.ico')));
    }
  }
  t.regex(readFileSync(join(dir, 'index.html'), 'utf8'), /<link rel="icon" href="\/favicon\.ico"/);
});

test('the API is never shadowed: /v1 and /health stay JSON, also for a browser', async (t) => {
  const base = await serve(t, await buildConsole());
  const html = { Accept: 'text/html' };
  t.deepEqual(await (await fetch(base + '/v1/ping', { headers: html })).json(), { pong: true });
  for (const path of ['/v1/unknown', '/v1', '/health/x']) {
    const res = await fetch(base + path, { headers: html });
    t.is(res.status, 404, path);
    t.deepEqual(await res.json(), { error: 'not_found' }, path);
  }
  // A path that is not the console's, asked for by a program rather than a browser: the JSON 404.
  const res = await fetch(base + '/nope');
  t.is(res.status, 404);
  t.deepEqual(await res.json(), { error: 'not_found' });
});

test('the whole service: /v1/unknown is a JSON 404 and / answers a page', async (t) => {
  const ta = await startApp(t);
  const api = await fetch(ta.base + '/v1/unknown', { headers: { Accept: 'text/html' } });
  t.is(api.status, 404);
  t.deepEqual(await api.json(), { error: 'not_found' });
  const page = await fetch(ta.base + '/', { headers: { Accept: 'text/html' } });
  t.is(page.status, 200);
  t.is(page.headers.get('content-security-policy'), CONSOLE_CSP);
  t.regex(await page.text(), /<html/);
});

test('traversal out of the console folder is refused', async (t) => {
  const dir = await buildConsole();
  const base = await serve(t, dir);
  const attempts = [
    '/assets/../../secret.txt',
    '/../secret.txt',
    '/assets/%2e%2e/%2e%2e/secret.txt',
    '/%2e%2e/secret.txt',
    '/assets/..%2f..%2fsecret.txt',
    '/..%5csecret.txt',
    '/assets/%2e%2e%5c%2e%2e%5csecret.txt',
    '/assets/%00.js',
    '/assets/%E0%A4%A.js',
  ];
  for (const path of attempts) {
    const res = await raw(base, path, { Accept: 'text/html' });
    t.true(res.status === 404 || res.status === 400, `${path}: ${res.status}`);
    t.false(res.body.includes('TOP SECRET'), path);
  }
  t.is(fileUnder(dir, '/assets/../../secret.txt'), null);
  t.is(fileUnder(dir, '/assets/ok.js'), join(dir, 'assets', 'ok.js'));
});

test('with no build (a production install from source), / answers a short page saying why and how to get it', async (t) => {
  const empty = mkdtempSync(join(tmpdir(), 'oncall-console-none-'));
  t.teardown(() => rmSync(empty, { recursive: true, force: true }));
  mkdirSync(join(empty, 'assets'));
  const base = await serve(t, join(empty, 'dist'));
  for (const path of ['/', '/sign-in']) {
    const res = await fetch(base + path, { headers: { Accept: 'text/html' } });
    t.is(res.status, 200, path);
    t.is(res.headers.get('content-type'), 'text/html; charset=utf-8');
    const text = await res.text();
    t.regex(text, /console is not built/);
    t.regex(text, /npm run build:web/);
    t.regex(text, /npm ci --omit=dev/, 'names the production install that leaves it out');
    t.regex(text, /npm pack/, 'names the release package that ships it');
  }
  t.is((await fetch(base + '/assets/index-x.js')).status, 404);
  t.deepEqual(await (await fetch(base + '/v1/ping')).json(), { pong: true });
});

test('the JavaScript shipped to the browser is under 150 KB gzipped', async (t) => {
  const dir = await buildConsole();
  const js = readdirSync(join(dir, 'assets')).filter((f) => f.endsWith('.js'));
  t.true(js.length > 0);
  const gzipped = js.reduce((sum, f) => sum + gzipSync(readFileSync(join(dir, 'assets', f)), { level: 9 }).length, 0);
  t.log(`console JavaScript: ${js.length} file(s), ${(gzipped / 1024).toFixed(1)} KB gzipped`);
  t.true(gzipped < JS_BUDGET_GZIP, `${gzipped} bytes gzipped`);
});
