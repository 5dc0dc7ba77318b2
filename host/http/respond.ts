import type { Request, Response } from 'restify';
import { AppError, type ErrorCode } from '../errors.ts';
import { isStorageFailure } from '../storage/failures.ts';
import type { Logger } from '../log.ts';
import { closeIfUnread } from './body.ts';
import { queryOf } from './query.ts';

/** A route's logic: returns [status, body]; throws AppError for every answer that is not a success. */
export type RouteFn = (req: Request, res: Response) => Promise<[number, unknown]>;

export interface RouteOptions {
  /** The query parameters the route reads; any other answers 400 naming it, so a typo never
   * returns unfiltered data. None by default. */
  query?: readonly string[];
}

/**
 * Wraps a route so that every outcome becomes JSON: typed errors with their status, storage
 * failures as 503, anything else as 500 `internal` (logged, never shown), and the process
 * keeps serving. Unknown query parameters are refused before the route runs.
 */
export function route(log: Logger, fn: RouteFn, opts: RouteOptions = {}) {
  const allowed = new Set(opts.query ?? []);
  return async (req: Request, res: Response): Promise<void> => {
    try {
      // Most requests carry no query at all: no URL to parse for them.
      const unknown = (req.url ?? '').includes('?') ? [...new Set(queryOf(req).keys())].filter((k) => !allowed.has(k)) : [];
      if (unknown.length > 0)
        throw new AppError('invalid_parameter', `unknown query parameter${unknown.length > 1 ? 's' : ''}: ${unknown.slice(0, 5).join(', ')}`);
      const [status, body] = await fn(req, res);
      closeIfUnread(req, res);
      res.send(status, body);
    } catch (e) {
      sendError(log, req, res, e);
    }
  };
}

export function sendError(log: Logger, req: Request, res: Response, e: unknown): void {
  let err: AppError;
  if (e instanceof AppError) err = e;
  else if (isStorageFailure(e)) err = new AppError('storage_unavailable');
  else {
    log.error({ err: e, method: req.method, path: req.getPath() }, 'request failed');
    err = new AppError('internal');
  }
  for (const [k, v] of Object.entries(err.headers)) res.header(k, v);
  closeIfUnread(req, res);
  res.send(err.status, err.toBody());
}

/** Restify's own errors (404, 405, 413, bad JSON from its parsers) mapped to our codes. */
const RESTIFY_CODES: Record<string, ErrorCode> = {
  ResourceNotFound: 'not_found',
  MethodNotAllowed: 'method_not_allowed',
  PayloadTooLarge: 'payload_too_large',
  RequestEntityTooLarge: 'payload_too_large',
  UnsupportedMediaType: 'unsupported_media_type',
  InvalidContent: 'invalid_json',
  BadRequest: 'invalid_body',
};

export function restifyErrorCode(err: { restCode?: string; code?: unknown; statusCode?: number }): ErrorCode {
  const name = err.restCode ?? (typeof err.code === 'string' ? err.code : undefined);
  const mapped = name === undefined ? undefined : RESTIFY_CODES[name];
  if (mapped !== undefined) return mapped;
  if (err.statusCode === 404) return 'not_found';
  if (err.statusCode === 413) return 'payload_too_large';
  if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) return 'invalid_body';
  return 'internal';
}
