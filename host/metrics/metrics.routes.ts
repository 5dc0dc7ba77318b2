import { createHash, timingSafeEqual } from 'node:crypto';
import type { Registry } from 'prom-client';
import type { Server } from 'restify';
import { AppError } from '../errors.ts';
import { bearerToken, type Guard } from '../http/guard.ts';
import { sendError } from '../http/respond.ts';
import type { Logger } from '../log.ts';

const digest = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/**
 * GET /metrics in Prometheus's text format. Off (404, as if it did not exist) unless
 * SERVICE_METRICS_TOKEN is set; then it takes that token as a bearer (what Prometheus is
 * given: it opens nothing else), or any bearer the API takes (the admin token, a session).
 */
export function metricsRoutes(server: Server, deps: { log: Logger; guard: Guard; registry: Registry | null; token: string | null }): void {
  const { log, guard, registry } = deps;
  const expected = deps.token === null ? null : digest(deps.token);
  server.get('/metrics', async (req, res) => {
    try {
      if (registry === null || expected === null) throw new AppError('not_found');
      const token = bearerToken(req);
      if (token === null) throw new AppError('unauthorized');
      if (!timingSafeEqual(digest(token), expected)) await guard.bearer(req);
      const text = await registry.metrics();
      res.sendRaw(200, text, { 'content-type': registry.contentType, 'cache-control': 'no-store' });
    } catch (e) {
      sendError(log, req, res, e);
    }
  });
}
