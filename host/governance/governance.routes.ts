import type { Request, Server } from 'restify';
import { AppError } from '../errors.ts';
import type { Guard } from '../http/guard.ts';
import { pageLimit, queryOf } from '../http/query.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import type { ApprovalState, Decision } from './approvals.model.ts';
import type { ApprovalsService } from './approvals.service.ts';
import { askerOf } from './asker.ts';
import type { AutonomyService } from './autonomy.service.ts';
import type { HaltService } from './halt.service.ts';
import { readJson, readBodyOrEmpty } from '../http/body.ts';

const BY = { type: 'string', maxLength: 254 } as const;

const autonomyBody = bodyValidator<{ service: string; level: string; by?: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['service', 'level'],
  properties: { service: { type: 'string', minLength: 1, maxLength: 200 }, level: { type: 'string', minLength: 1, maxLength: 16 }, by: BY },
});

const haltBody = bodyValidator<{ by?: string; reason: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['reason'],
  properties: { by: BY, reason: { type: 'string', minLength: 1, maxLength: 1000, pattern: '\\S' } },
});

const resumeBody = bodyValidator<{ by?: string }>({
  type: 'object',
  additionalProperties: false,
  properties: { by: BY },
});

const decisionBody = bodyValidator<{ note?: string }>({
  type: 'object',
  additionalProperties: false,
  properties: { note: { type: 'string', maxLength: 1000 } },
});

const STATES: readonly ApprovalState[] = ['pending', 'approved', 'rejected', 'expired', 'superseded'];
const DEFAULT_PAGE = 100;
const MAX_PAGE = 500;

/**
 * Autonomy, approvals and the halt switch. Everyone signed in reads; changing autonomy,
 * deciding and the switch need an admin or an owner. The switch works in every mode (a safety
 * control is never refused for a licence reason); the rest answers 503 until operating.
 */
export function governanceRoutes(
  server: Server,
  deps: { log: Logger; guard: Guard; autonomy: AutonomyService; approvals: ApprovalsService; halt: HaltService },
): void {
  const { log, guard, autonomy, approvals, halt } = deps;

  server.get(
    '/v1/autonomy',
    route(log, async (req) => {
      await guard.bearer(req);
      await guard.operating();
      return [200, await autonomy.overview()];
    }),
  );

  server.post(
    '/v1/autonomy',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      const body = autonomyBody(await readJson(req));
      const asker = askerOf(who, body.by);
      return [202, await autonomy.set(body.service, body.level, asker)];
    }),
  );

  server.get(
    '/v1/approvals',
    route(
      log,
      async (req) => {
        await guard.bearer(req);
        await guard.operating();
        const q = queryOf(req);
        const state = q.get('state') || undefined;
        if (state !== undefined && !(STATES as readonly string[]).includes(state))
          throw new AppError('invalid_parameter', `state must be one of ${STATES.join(', ')}`);
        const limit = pageLimit(q, DEFAULT_PAGE, MAX_PAGE);
        return [200, { approvals: await approvals.list({ state: state as ApprovalState | undefined, limit }) }];
      },
      { query: ['state', 'limit'] },
    ),
  );

  const decide = (decision: Decision) =>
    route(log, async (req: Request) => {
      // Anyone signed in reaches the request: an action request names its service's approvers
      // (people of any role), who alone decide it; every other request needs an admin or owner.
      const who = await guard.withRole(req, 'viewer');
      await guard.operating();
      const body = decisionBody(await readBodyOrEmpty(req));
      const id = String(req.params?.id ?? '');
      if (id.length === 0 || id.length > 40) throw new AppError('not_found', 'no such approval request');
      return [200, { approval: await approvals.decide(id, decision, body.note ?? null, who.actor, who.role !== 'viewer') }];
    });
  server.post('/v1/approvals/:id/approve', decide('approve'));
  server.post('/v1/approvals/:id/reject', decide('reject'));

  server.post(
    '/v1/halt',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      const body = haltBody(await readJson(req));
      return [200, await halt.halt(askerOf(who, body.by), body.reason.trim())];
    }),
  );

  server.post(
    '/v1/resume',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      const body = resumeBody(await readBodyOrEmpty(req));
      return [200, await halt.resume(askerOf(who, body.by))];
    }),
  );
}
