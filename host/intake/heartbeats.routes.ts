import type { Server } from 'restify';
import type { Guard } from '../http/guard.ts';
import { readJson } from '../http/body.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import type { HeartbeatService, SourceHeartbeats } from './heartbeats.ts';

const putBody = bodyValidator<{ sources: Record<string, SourceHeartbeats> }>({
  type: 'object',
  additionalProperties: false,
  required: ['sources'],
  properties: {
    sources: {
      type: 'object',
      maxProperties: 50,
      propertyNames: { pattern: '^[a-z][a-z0-9_-]{0,31}$' },
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        properties: {
          alerts: { type: 'array', maxItems: 20, uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: 200 } },
          timeout_s: { anyOf: [{ type: 'integer', minimum: 30, maximum: 7 * 86400 }, { type: 'null' }] },
        },
      },
    },
  },
});

/** GET (viewer) and PUT (admin) /v1/settings/heartbeats: which alerts are heartbeats per source, their timeouts and states. */
export function heartbeatRoutes(server: Server, deps: { log: Logger; guard: Guard; heartbeats: HeartbeatService }): void {
  const { log, guard, heartbeats } = deps;

  server.get(
    '/v1/settings/heartbeats',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      await guard.operating();
      return [200, await heartbeats.view()];
    }),
  );

  server.put(
    '/v1/settings/heartbeats',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      return [200, await heartbeats.put(putBody(await readJson(req)).sources, who.actor)];
    }),
  );
}
