import type { Server } from 'restify';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import { BLOCKED_SCHEMA_PATTERN, DISPOSABLE_DOMAINS, DOMAIN_SCHEMA_PATTERN, MAX_POLICY_ENTRIES, type AccessPolicy } from './access-policy.ts';
import type { AccessPolicyService } from './access.service.ts';
import { readJson } from '../http/body.ts';
import { takeBack, type Revision } from '../settings/revisions.ts';

/** What GET adds that PUT takes back and ignores (the version is checked: docs/api.md, round trips). */
const GET_ONLY = ['disposable_count'] as const;

const policyBody = bodyValidator<AccessPolicy & Partial<Revision> & { source?: unknown; disposable_count?: unknown }>({
  type: 'object',
  additionalProperties: false,
  required: ['allowed_domains', 'blocked', 'block_webmail'],
  properties: {
    version: { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'null' }] },
    source: {},
    updated_at: {},
    updated_by: {},
    disposable_count: {},
    allowed_domains: { type: 'array', maxItems: MAX_POLICY_ENTRIES, items: { type: 'string', pattern: DOMAIN_SCHEMA_PATTERN } },
    blocked: { type: 'array', maxItems: MAX_POLICY_ENTRIES, items: { type: 'string', pattern: BLOCKED_SCHEMA_PATTERN } },
    block_webmail: { type: 'boolean' },
  },
});

/** The answer of both calls: the policy, its version, and how many disposable-mail domains are always refused. */
const answer = (policy: AccessPolicy & Revision) => ({ ...policy, disposable_count: DISPOSABLE_DOMAINS.length });

export function accessRoutes(server: Server, deps: { log: Logger; guard: Guard; access: AccessPolicyService }): void {
  const { log, guard, access } = deps;

  server.get(
    '/v1/settings/access',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      return [200, answer(await access.view())];
    }),
  );

  server.put(
    '/v1/settings/access',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      const { doc, version } = takeBack(policyBody(await readJson(req)), GET_ONLY);
      await access.put(doc as AccessPolicy, who, version);
      return [200, answer(await access.view())];
    }),
  );
}
