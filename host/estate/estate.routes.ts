import type { Server } from 'restify';
import { readBodyOrEmpty, readJson } from '../http/body.ts';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import type { EstateBuilder } from './estate.build.ts';
import { OVERRIDES_SCHEMA } from './estate.schema.ts';
import type { EstateService } from './estate.service.ts';

const suggestionBody = bodyValidator<{ id: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 64 } },
});

/**
 * The estate: viewers read (`GET /v1/estate`, a service, the overrides and their schema, the
 * suggestions); admins change (`PUT /v1/estate/overrides`, confirm or dismiss a suggestion,
 * `POST /v1/estate/build`). All answer 503 until the install is operating.
 */
export function estateRoutes(server: Server, deps: { log: Logger; guard: Guard; estate: EstateService; builder: EstateBuilder }): void {
  const { log, guard, estate, builder } = deps;
  const viewer = async (req: Parameters<Guard['withRole']>[0]) => {
    await guard.withRole(req, 'viewer');
    await guard.operating();
  };

  server.get(
    '/v1/estate',
    route(log, async (req) => {
      await viewer(req);
      return [200, await estate.estate()];
    }),
  );

  server.get(
    '/v1/estate/services/:name',
    route(log, async (req) => {
      await viewer(req);
      return [200, { service: await estate.service(String(req.params?.name ?? '')) }];
    }),
  );

  server.get(
    '/v1/estate/overrides/schema',
    route(log, async (req) => {
      await viewer(req);
      return [200, OVERRIDES_SCHEMA];
    }),
  );

  server.get(
    '/v1/estate/overrides',
    route(log, async (req) => {
      await viewer(req);
      return [200, await estate.overrides()];
    }),
  );

  server.put(
    '/v1/estate/overrides',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      // 202 when part of the change waits for two approvals (`pending`), 200 when all of it applied.
      const view = await estate.putOverrides(await readJson(req), who);
      return [view.asked.length > 0 ? 202 : 200, view];
    }),
  );

  server.get(
    '/v1/estate/suggestions',
    route(log, async (req) => {
      await viewer(req);
      return [200, { suggestions: await estate.suggestions() }];
    }),
  );

  for (const how of ['confirm', 'dismiss'] as const) {
    server.post(
      `/v1/estate/suggestions/${how}`,
      route(log, async (req) => {
        const who = await guard.withRole(req, 'admin');
        await guard.operating();
        const { id } = suggestionBody(await readJson(req));
        return [200, { suggestion: await estate.decide(id, how, who) }];
      }),
    );
  }

  server.post(
    '/v1/estate/build',
    route(log, async (req, res) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      await readBodyOrEmpty(req);
      const job = await builder.start(who);
      res.header('location', `/v1/jobs/${job.id}`);
      return [202, { job }];
    }),
  );
}
