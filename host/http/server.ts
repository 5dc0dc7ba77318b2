import restify, { type Request, type Response, type Server } from 'restify';
import { AppError } from '../errors.ts';
import { INVALID_JSON } from './validate.ts';
import type { Logger } from '../log.ts';
import { VERSION } from '../version.ts';
import { restifyErrorCode } from './respond.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The one HTTP server: API under /v1 (and /health); the console's files come from console.ts.
 * Bodies are read up to 1 MiB (413 past it) and parsed as JSON whatever the content type,
 * since alert tools are careless with it; bad JSON is 400 `invalid_json` once the route has
 * checked who is calling.
 */
export function createServer(log: Logger): Server {
  const server = restify.createServer({ name: 'oncall', version: VERSION, handleUncaughtExceptions: false });

  server.use(restify.plugins.bodyReader({ maxBodySize: MAX_BODY_BYTES }));
  server.use(async (req: Request) => {
    const raw: unknown = req.body;
    const text = Buffer.isBuffer(raw) ? raw.toString('utf8') : typeof raw === 'string' ? raw : '';
    if (text.trim() === '') {
      req.body = undefined;
      return;
    }
    try {
      req.body = JSON.parse(text);
    } catch {
      // Answered by the route's validator, after its authorisation check: an unauthenticated
      // caller learns nothing about how its body was read.
      req.body = INVALID_JSON;
    }
  });

  server.on('restifyError', (req: Request, res: Response, err: Error & { restCode?: string; statusCode?: number; toJSON?: () => unknown }, cb: () => void) => {
    const body = err instanceof AppError ? err.toBody() : { error: restifyErrorCode(err) };
    if (body.error === 'internal') log.error({ err, method: req.method, path: req.getPath() }, 'request failed');
    // Restify sends an error as it is only when it carries a status; otherwise it wraps it in
    // an InternalError whose message is the cause, which must not reach the caller.
    err.statusCode ??= 500;
    err.toJSON = () => body;
    cb();
  });

  server.on('after', (req: Request, res: Response) => {
    log.info({ method: req.method, path: req.getPath(), status: res.statusCode, ms: Date.now() - req.time() }, 'request');
  });

  return server;
}
