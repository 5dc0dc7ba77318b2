import type { Server } from 'restify';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import type { Logger } from '../log.ts';
import type { LiveService } from './live.service.ts';

/** GET /v1/live (bearer): open debounce windows, open episodes, pending approvals, the last tick. */
export function liveRoutes(server: Server, deps: { log: Logger; guard: Guard; live: LiveService }): void {
  server.get(
    '/v1/live',
    route(deps.log, async (req) => {
      await deps.guard.bearer(req);
      return [200, await deps.live.live()];
    }),
  );
}
