import type { Server } from 'restify';
import type { Guard } from '../http/guard.ts';
import { readJson } from '../http/body.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import type { NotifyStatus } from './delivery.service.ts';
import type { NotifySettingsInput, NotifySettingsService } from './notify-settings.service.ts';

const putBody = bodyValidator<NotifySettingsInput>({
  type: 'object',
  additionalProperties: false,
  properties: {
    recipients: { type: 'array', maxItems: 100, items: { type: 'string', format: 'email', maxLength: 254 } },
    targets: { type: 'array', maxItems: 50, items: { type: 'string', minLength: 1, maxLength: 63 } },
    // Read-only: what GET answered may be sent back; only an older version is refused.
    version: { type: 'integer', minimum: 0 },
    updated_at: { anyOf: [{ type: 'string', maxLength: 40 }, { type: 'null' }] },
    updated_by: { anyOf: [{ type: 'string', maxLength: 254 }, { type: 'null' }] },
  },
});

/** GET (viewer) and PUT (admin) /v1/settings/notifications; GET /v1/notifications (viewer): how delivery goes. */
export function notifyRoutes(server: Server, deps: { log: Logger; guard: Guard; settings: NotifySettingsService; status: () => Promise<NotifyStatus> }): void {
  const { log, guard, settings } = deps;

  server.get(
    '/v1/settings/notifications',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      return [200, await settings.get()];
    }),
  );

  server.put(
    '/v1/settings/notifications',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      return [200, await settings.put(putBody(await readJson(req)), who)];
    }),
  );

  server.get(
    '/v1/notifications',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      return [200, await deps.status()];
    }),
  );
}
