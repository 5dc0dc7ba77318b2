import type { Request, Server } from 'restify';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import { PASSWORD_ENDS, type NewPerson, type PasswordEnd, type PeopleService, type PersonPatch } from './people.service.ts';
import { readJson, readBodyOrEmpty } from '../http/body.ts';

const EMAIL = { type: 'string', format: 'email', maxLength: 254 } as const;
const NAME = { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' } as const;
const ROLE = { enum: ['owner', 'admin', 'viewer'] } as const;
const LABELS = { type: 'array', maxItems: 50, uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: 100 } } as const;

const newPerson = bodyValidator<NewPerson>({
  type: 'object',
  additionalProperties: false,
  required: ['email', 'name', 'role'],
  properties: { email: EMAIL, name: NAME, role: ROLE, teams: LABELS, tags: LABELS },
});

const personPatch = bodyValidator<PersonPatch>({
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { name: NAME, role: ROLE, teams: LABELS, tags: LABELS, enabled: { type: 'boolean' } },
});

const passwordBody = bodyValidator<{ expires?: PasswordEnd }>({
  type: 'object',
  additionalProperties: false,
  properties: { expires: { enum: Object.keys(PASSWORD_ENDS) } },
});

/** People and their roles; the service decides who may do what. */
export function peopleRoutes(server: Server, deps: { log: Logger; guard: Guard; people: PeopleService }): void {
  const { log, guard, people } = deps;
  const email = (req: Request): string => String(req.params?.email ?? '');

  server.get(
    '/v1/people',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      return [200, { people: await people.list() }];
    }),
  );

  server.post(
    '/v1/people',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      return [201, { person: await people.add(newPerson(await readJson(req)), who) }];
    }),
  );

  server.patch(
    '/v1/people/:email',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      return [200, { person: await people.change(email(req), personPatch(await readJson(req)), who) }];
    }),
  );

  server.post(
    '/v1/people/:email/password',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'owner');
      const body = passwordBody(await readBodyOrEmpty(req));
      return [201, await people.setPassword(email(req), body.expires ?? '30d', who)];
    }),
  );

  server.del(
    '/v1/people/:email/password',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'owner');
      await people.removePassword(email(req), who);
      return [200, { removed: true }];
    }),
  );
}
