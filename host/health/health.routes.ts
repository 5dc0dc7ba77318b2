import type { Server } from 'restify';
import { route } from '../http/respond.ts';
import type { Logger } from '../log.ts';
import type { Readiness } from './readiness.service.ts';

/**
 * GET /health/ready: 200 `{"status":"ready"}`, or 503 `{"error":"not_ready","reasons":[…]}`.
 * No token (balancers probe it); the reasons are codes only, the details go to the log.
 */
export function healthRoutes(server: Server, deps: { log: Logger; readiness: Readiness }): void {
  server.get(
    '/health/ready',
    route(deps.log, async () => {
      const r = await deps.readiness.check();
      return r.ready ? [200, { status: 'ready' }] : [503, { error: 'not_ready', reasons: r.reasons }];
    }),
  );
}
