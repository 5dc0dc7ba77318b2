import type { Server } from 'restify';
import { AppError } from '../errors.ts';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import type { Logger } from '../log.ts';
import type { IntakeService } from './intake.service.ts';
import { readJson } from '../http/body.ts';

const SOURCE = /^[a-z][a-z0-9_-]{0,31}$/;

export function intakeRoutes(server: Server, deps: { log: Logger; guard: Guard; intake: IntakeService }): void {
  const { log, guard, intake } = deps;

  /** Alert webhooks. 202 only once the alerts and their ledger event are committed. */
  server.post(
    '/v1/alerts/:source',
    route(log, async (req) => {
      const who = guard.ingest(req);
      await guard.operating();
      const source = String(req.params.source ?? '').toLowerCase();
      if (!SOURCE.test(source)) throw new AppError('not_found');
      return [202, await intake.push(source, await readJson(req), `${who.actor}:${source}`)];
    }),
  );
}
