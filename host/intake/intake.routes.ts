import type { Server } from 'restify';
import { AppError } from '../errors.ts';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import { INVALID_JSON } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import type { IntakeService } from './intake.service.ts';

const SOURCE = /^[a-z][a-z0-9_-]{0,31}$/;

export function intakeRoutes(server: Server, deps: { log: Logger; guard: Guard; intake: IntakeService }): void {
  const { log, guard, intake } = deps;

  /** Alert webhooks. 202 only once the alerts and their ledger event are committed. */
  server.post('/v1/alerts/:source', route(log, async (req) => {
    const who = guard.ingest(req);
    await guard.operating();
    const source = String(req.params.source ?? '').toLowerCase();
    if (!SOURCE.test(source)) throw new AppError('not_found');
    if (req.body === INVALID_JSON) throw new AppError('invalid_json', 'the body is not valid JSON');
    return [202, await intake.push(source, req.body, `${who.actor}:${source}`)];
  }));
}
