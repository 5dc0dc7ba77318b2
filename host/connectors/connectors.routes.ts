import type { Server } from 'restify';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import type { ConnectorQueryRequest } from '../plugins/contract.ts';
import type { ConnectorInput, ConnectorService } from './connectors.service.ts';
import { readJson } from '../http/body.ts';

const KIND = { type: 'string', minLength: 1, maxLength: 64 } as const;

/**
 * What GET /v1/connectors/{name} adds to `{kind, settings}`: taken back and ignored, so that a
 * GET answer can be sent back with one setting changed (secrets masked as `{"set": true}` keep
 * the stored value). `version` here is the plugin's, not a document version.
 */
const GET_ONLY = ['name', 'source', 'version', 'state', 'last_problem', 'last_checked_at', 'found', 'updated_at', 'updated_by'] as const;

const putBody = bodyValidator<ConnectorInput>({
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'settings'],
  properties: { kind: KIND, settings: { type: 'object' }, ...Object.fromEntries(GET_ONLY.map((k) => [k, {}])) },
});

/** The PUT body without what GET added. */
const inputOf = (body: ConnectorInput): ConnectorInput => ({ kind: body.kind, settings: body.settings });

const testBody = bodyValidator<ConnectorInput & { name?: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['kind', 'settings'],
  properties: { kind: KIND, settings: { type: 'object' }, name: { type: 'string', minLength: 1, maxLength: 63 } },
});

const queryBody = bodyValidator<ConnectorQueryRequest>({
  type: 'object',
  additionalProperties: false,
  required: ['query'],
  properties: {
    query: { type: 'string', minLength: 1, maxLength: 20_000 },
    at: { type: 'string', format: 'date-time' },
    params: { type: 'object', maxProperties: 32, additionalProperties: { type: 'string', maxLength: 2000 } },
  },
});

const nameOf = (params: Record<string, unknown> | undefined): string => String(params?.name ?? '');

/**
 * Connectors: the catalogue of kinds and the configured connectors (viewer); test, add or
 * update, remove, check and query (admin). All answer 503 until the install is operating.
 */
export function connectorRoutes(server: Server, deps: { log: Logger; guard: Guard; connectors: ConnectorService }): void {
  const { log, guard, connectors } = deps;

  server.get(
    '/v1/connectors/catalogue',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      await guard.operating();
      return [200, { kinds: connectors.kinds.catalogue() }];
    }),
  );

  server.get(
    '/v1/connectors',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      await guard.operating();
      return [200, await connectors.list()];
    }),
  );

  server.post(
    '/v1/connectors/test',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      return [200, await connectors.test(testBody(await readJson(req)), who)];
    }),
  );

  server.get(
    '/v1/connectors/:name',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      await guard.operating();
      return [200, await connectors.get(nameOf(req.params))];
    }),
  );

  server.put(
    '/v1/connectors/:name',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      const { created, connector } = await connectors.put(nameOf(req.params), inputOf(putBody(await readJson(req))), who);
      return [created ? 201 : 200, connector];
    }),
  );

  server.del(
    '/v1/connectors/:name',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      return [200, await connectors.remove(nameOf(req.params), who)];
    }),
  );

  server.post(
    '/v1/connectors/:name/check',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      return [200, await connectors.check(nameOf(req.params), who)];
    }),
  );

  server.post(
    '/v1/connectors/:name/query',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      return [200, await connectors.query(nameOf(req.params), queryBody(await readJson(req)), who)];
    }),
  );
}
