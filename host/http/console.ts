import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Next, Request, Response, Server } from 'restify';

/** Where `npm run build:web` (run by `npm install` through `prepare`) puts the console. */
export const CONSOLE_DIST = fileURLToPath(new URL('../../web/dist/', import.meta.url));

/**
 * The console's policy: its own scripts, styles and API only. No inline script or style, no
 * eval, no framing. `style-src-attr` stays closed too: the console sets no style attributes.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};

const IMMUTABLE = 'public, max-age=31536000, immutable';

const NOT_BUILT = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>On-call engineer: console not built</title></head>
<body>
<h1>The console is not built</h1>
<p>The service and its HTTP API are running on this port (<code>GET /v1/status</code>), but
the web console's files are missing from <code>web/dist</code>. This happens after a production
install (<code>npm ci --omit=dev</code>) from a source checkout: the console is built with Vite, a
development tool that such an install leaves out.</p>
<p>Either install from the release package (<code>npm pack</code> of the source; it ships the
built console), or build it where the development tools are (<code>npm ci</code>, which builds it,
or <code>npm run build:web</code>) and copy <code>web/dist</code> here, then reload. See
<code>docs/install.md</code>.</p>
</body>
</html>
`;

const NOT_FOUND = JSON.stringify({ error: 'not_found' });

/** Paths the console never answers: the API's, whose unknown routes stay JSON 404s. */
function isApiPath(path: string): boolean {
  return path === '/v1' || path.startsWith('/v1/') || path === '/health' || path.startsWith('/health/');
}

/**
 * A request path as a file under `root`, or null when it cannot be one: bad escapes, NUL,
 * backslashes, dot segments (also percent-encoded ones, decoded first) or anything that
 * resolves outside `root`.
 */
export function fileUnder(root: string, rawPath: string): string | null {
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    return null;
  }
  if (path.includes('\0') || path.includes('\\')) return null;
  const segments = path.split('/');
  if (segments.some((s) => s === '..' || s === '.')) return null;
  const base = resolve(root);
  const file = resolve(base, '.' + path);
  return file.startsWith(base + sep) ? file : null;
}

function fileSize(file: string): { size: number; mtimeMs: number } | null {
  try {
    const st = statSync(file);
    return st.isFile() ? { size: st.size, mtimeMs: st.mtimeMs } : null;
  } catch {
    return null;
  }
}

function send(req: Request, res: Response, status: number, headers: Record<string, string>, body: Buffer): void {
  res.writeHead(status, { 'Content-Length': String(body.length), 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer', ...headers });
  res.end(req.method === 'HEAD' ? undefined : body);
}

function sendFile(req: Request, res: Response, file: string, cache: string, extra: Record<string, string> = {}): boolean {
  const st = fileSize(file);
  if (st === null) return false;
  let body: Buffer;
  try {
    body = readFileSync(file);
  } catch {
    return false;
  }
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  const headers = { 'Content-Type': TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream', 'Cache-Control': cache, ETag: etag, ...extra };
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, { 'Cache-Control': cache, ETag: etag });
    res.end();
    return true;
  }
  send(req, res, 200, headers, body);
  return true;
}

/** Whether a client asked for a page (a browser's navigation), not for data. */
function wantsHtml(req: Request): boolean {
  return (req.headers.accept ?? '').includes('text/html');
}

export interface ConsoleOptions {
  /** The built console; `web/dist` unless a test points elsewhere. */
  dir?: string;
}

/**
 * Serves the built console on the API's port, in front of the router so that it never meets
 * the API's routes:
 * - `/`, `/index.html`, and (for a browser navigation: `Accept: text/html`) any other path
 *   without an extension → `index.html`, `no-cache`, with the console's CSP. A call that does
 *   not ask for HTML (curl, fetch, the CLI) to an unknown path still gets the JSON 404.
 * - `/assets/*` → the hashed files, a year's immutable cache; anything else with an extension
 *   → the file at the top of the build (`no-cache`) when there is one.
 * - `/v1/*` and `/health` are never touched. Missing files fall through to the JSON 404.
 * - No build: `/` answers a short page saying how to build it.
 * Files are read per request (the console is small), so a build made while the host runs is
 * served at once.
 */
export function consoleRoutes(server: Server, opts: ConsoleOptions = {}): void {
  const dir = resolve(opts.dir ?? CONSOLE_DIST);
  const index = resolve(dir, 'index.html');
  const page = { 'Content-Security-Policy': CONSOLE_CSP, 'X-Frame-Options': 'DENY' };

  server.pre((req: Request, res: Response, next: Next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const rawPath = (req.url ?? '/').split('?')[0]!.split('#')[0]!;
    if (isApiPath(rawPath)) return next();

    const serveIndex = (): void => {
      if (!sendFile(req, res, index, 'no-cache', page)) {
        send(req, res, 200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-cache', ...page }, Buffer.from(NOT_BUILT));
      }
      next(false);
    };

    if (rawPath === '/' || rawPath === '/index.html') return serveIndex();
    const file = fileUnder(dir, rawPath);
    if (file === null || rawPath.startsWith('/assets/')) {
      // Refused (traversal, bad escapes) or a hashed file that is not there: the API's 404.
      if (file === null || !sendFile(req, res, file, IMMUTABLE)) send(req, res, 404, { 'Content-Type': 'application/json' }, Buffer.from(NOT_FOUND));
      return next(false);
    }
    if (extname(rawPath) !== '') {
      if (sendFile(req, res, file, 'no-cache')) return next(false);
      return next();
    }
    if (wantsHtml(req)) return serveIndex();
    return next();
  });
}
