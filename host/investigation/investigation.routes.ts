import type { Server } from 'restify';
import { AppError } from '../errors.ts';
import { readJson } from '../http/body.ts';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import type { CauseCatalogue } from './catalogue.ts';
import type { CheckRun, CheckRunRequest } from './checks-now.ts';

const runBody = bodyValidator<{ service: string; cause?: string; at?: string; record?: boolean }>({
  type: 'object',
  additionalProperties: false,
  required: ['service'],
  properties: {
    service: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$' },
    cause: { type: 'string', pattern: '^[a-z][a-z0-9-]{1,63}/[a-z][a-z0-9-]{0,63}$' },
    at: { type: 'string', format: 'date-time' },
    record: { type: 'boolean' },
  },
});

/**
 * The packs and their causes (`GET /v1/packs`, viewers) and checks run by hand
 * (`POST /v1/checks/run`, admins: it reads through the connectors). Both answer 503 until the
 * install is operating.
 */
export function investigationRoutes(
  server: Server,
  deps: { log: Logger; guard: Guard; catalogue: CauseCatalogue; checksNow: (r: CheckRunRequest) => Promise<CheckRun>; now: () => Date },
): void {
  const { log, guard, catalogue } = deps;

  server.get(
    '/v1/packs',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      await guard.operating();
      return [200, { packs: catalogue.packs.map(({ dir: _dir, ...p }) => p) }];
    }),
  );

  server.post(
    '/v1/checks/run',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      const body = runBody(await readJson(req));
      const at = body.at === undefined ? deps.now() : new Date(body.at);
      if (Number.isNaN(at.getTime())) throw new AppError('invalid_body', 'at must be an ISO 8601 time');
      return [
        200,
        await deps.checksNow({
          service: body.service,
          cause: body.cause ?? null,
          at,
          asked: body.at !== undefined,
          record: body.record === true,
          actor: who.actor,
        }),
      ];
    }),
  );
}
