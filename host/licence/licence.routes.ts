import type { Server } from 'restify';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import type { LicenceService } from './licence.service.ts';
import { readJson, readBodyOrEmpty } from '../http/body.ts';

const installBody = bodyValidator<{ licence: Record<string, unknown> }>({
  type: 'object',
  additionalProperties: false,
  required: ['licence'],
  properties: { licence: { type: 'object' } },
});

const redeemBody = bodyValidator<{ customer?: string }>({
  type: 'object',
  additionalProperties: false,
  properties: { customer: { type: 'string', minLength: 1, maxLength: 200 } },
});

export function licenceRoutes(server: Server, deps: { log: Logger; guard: Guard; licences: LicenceService }): void {
  const { log, guard, licences } = deps;

  server.post(
    '/v1/licence',
    route(log, async (req) => {
      const who = await guard.bearer(req);
      guard.role(who, 'owner');
      const { licence } = installBody(await readJson(req));
      return [200, { licence: await licences.installLicence(licence, who.actor) }];
    }),
  );

  server.post(
    '/v1/licence/redeem',
    route(log, async (req) => {
      const who = await guard.bearer(req);
      guard.role(who, 'owner');
      const { customer } = redeemBody(await readBodyOrEmpty(req));
      return [201, { licence: await licences.redeemTrial(customer, who.actor) }];
    }),
  );
}
