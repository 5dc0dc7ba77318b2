import restify, { type Request, type Response, type Server } from 'restify';
import { AppError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { VERSION } from '../version.ts';
import { closeIfUnread } from './body.ts';
import { restifyErrorCode } from './respond.ts';
import type { TlsMaterial } from './tls.ts';

export { MAX_BODY_BYTES } from './body.ts';

/**
 * The one HTTP server: API under /v1 (and /health); the console's files come from console.ts.
 * No body is read here: each route reads its own with `readJson` (http/body.ts) after its
 * authorisation check, so a caller that is not allowed in never has a body read, decompressed
 * or parsed. HEAD is answered as GET without the body (monitoring probes use it). With `tls`
 * (SERVICE_TLS_CERT/KEY) it serves HTTPS on the same port, and only HTTPS.
 */
export function createServer(log: Logger, tls: TlsMaterial | null = null): Server {
  // Restify's own log lines (a response it cannot format, a discarded value) go through our
  // logger, whose serializers keep only method and path of a request: never its headers.
  const server = restify.createServer({
    name: 'oncall',
    version: VERSION,
    handleUncaughtExceptions: false,
    log: log.child({ component: 'http' }) as never,
    ...(tls === null ? {} : { certificate: tls.cert, key: tls.key }),
  });

  server.pre((req: Request, res: Response, next: () => void) => {
    // Node already decided, from the original method, that a HEAD answer carries no body.
    if (req.method === 'HEAD') req.method = 'GET';
    next();
  });

  server.on('restifyError', (req: Request, res: Response, err: Error & { restCode?: string; statusCode?: number; toJSON?: () => unknown }, cb: () => void) => {
    const body = err instanceof AppError ? err.toBody() : { error: restifyErrorCode(err) };
    if (body.error === 'internal') log.error({ err, method: req.method, path: req.getPath() }, 'request failed');
    closeIfUnread(req, res);
    // Restify sends an error as it is only when it carries a status; otherwise it wraps it in
    // an InternalError whose message is the cause, which must not reach the caller.
    err.statusCode ??= 500;
    err.toJSON = () => body;
    cb();
  });

  server.on('after', (req: Request, res: Response) => {
    const line = { method: req.method ?? '', path: req.getPath(), status: res.statusCode, ms: Date.now() - req.time() };
    // Polls (each console tab reads /v1/status every second; probes and scrapers) answered
    // normally are logged at debug: at info they made two thirds of all lines. A poll that
    // fails or is refused stays at info.
    if (isPoll(line.method, line.path, line.status)) log.debug(line, 'request');
    else log.info(line, 'request');
  });

  return server;
}

/** The paths read over and over by the console, probes and scrapers (docs/api.md, "Request log"). */
export const POLLED_PATHS: ReadonlySet<string> = new Set(['/v1/status', '/v1/live', '/health', '/health/ready', '/metrics']);

/** Whether a request's line is a poll's, logged at debug: a GET of a polled path answered below 400. */
export function isPoll(method: string, path: string, status: number): boolean {
  return method === 'GET' && status < 400 && POLLED_PATHS.has(path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);
}
