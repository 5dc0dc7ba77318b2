import type { Server } from 'restify';
import { route } from '../http/respond.ts';
import type { Logger } from '../log.ts';
import type { StatusService } from './status.service.ts';

export function statusRoutes(server: Server, deps: { log: Logger; status: StatusService }): void {
  server.get(
    '/health',
    route(deps.log, async () => [200, { status: 'ok' }]),
  );
  server.get(
    '/v1/status',
    route(deps.log, async () => [200, await deps.status.status()]),
  );
}
