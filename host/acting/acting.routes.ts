import type { Server } from 'restify';
import { AppError } from '../errors.ts';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import type { Logger } from '../log.ts';
import type { ActingService } from './acting.service.ts';

/** `POST /v1/episodes/{id}/actions/{n}/undo` (admin, operating): reverses a reversible executed action through the gate. */
export function actingRoutes(server: Server, deps: { log: Logger; guard: Guard; acting: ActingService }): void {
  const { log, guard, acting } = deps;
  server.post(
    '/v1/episodes/:id/actions/:n/undo',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      const id = String(req.params?.id ?? '');
      const n = Number(req.params?.n);
      if (id.length === 0 || id.length > 40 || !Number.isInteger(n) || n < 1) throw new AppError('not_found', 'the episode has no such executed action');
      return [200, { action: await acting.undo(id, n, who.actor) }];
    }),
  );
}
