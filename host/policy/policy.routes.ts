import type { Request, Response, Server } from 'restify';
import { AppError } from '../errors.ts';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import type { Logger } from '../log.ts';
import { POLICY_SCHEMA } from './policy.schema.ts';
import type { PolicyInForce, PolicyService } from './policy.service.ts';
import { readJson } from '../http/body.ts';

/** The version an If-Match header names (`"3"`, `W/"3"` or `3`); null when absent or `*`. */
export function ifMatchVersion(req: Request): number | null {
  const h = req.headers['if-match'];
  if (h === undefined) return null;
  const text = (Array.isArray(h) ? h.join(',') : h).trim();
  if (text === '*') return null;
  const m = /^(?:W\/)?"?(\d{1,9})"?$/.exec(text);
  if (m === null) throw new AppError('invalid_parameter', 'If-Match must name one policy version, such as "3"');
  return Number(m[1]);
}

function answer(res: Response, policy: PolicyInForce): [number, PolicyInForce] {
  res.header('ETag', `"${policy.version}"`);
  return [200, policy];
}

/**
 * GET /v1/policy (viewer, operating), PUT /v1/policy (admin, operating),
 * GET /v1/policy/schema (viewer, any mode).
 */
export function policyRoutes(server: Server, deps: { log: Logger; guard: Guard; policy: PolicyService }): void {
  const { log, guard, policy } = deps;

  server.get(
    '/v1/policy/schema',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      return [200, POLICY_SCHEMA];
    }),
  );

  server.get(
    '/v1/policy',
    route(log, async (req, res) => {
      await guard.withRole(req, 'viewer');
      await guard.operating();
      return answer(res, await policy.get());
    }),
  );

  server.put(
    '/v1/policy',
    route(log, async (req, res) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      const expected = ifMatchVersion(req);
      if (policy.fileManaged) throw new AppError('policy_file_managed', 'the policy is managed by policy.json in SERVICE_CONFIG_DIR');
      return answer(res, await policy.put(await readJson(req), who, expected));
    }),
  );
}
