import type { Server } from 'restify';
import { AppError } from '../errors.ts';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import type { BootstrapInput, BootstrapService } from './bootstrap.service.ts';
import type { PeopleRepo } from './people.repo.ts';
import type { MachineTokens } from './tokens.ts';

const EMAIL = { type: 'string', format: 'email', maxLength: 254 } as const;

const loginBody = bodyValidator<{ token: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['token'],
  properties: { token: { type: 'string', minLength: 1, maxLength: 512 } },
});

const bootstrapBody = bodyValidator<BootstrapInput>({
  type: 'object',
  additionalProperties: false,
  required: ['email', 'name'],
  properties: {
    email: EMAIL,
    name: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S' },
    resend_key: { type: 'string', minLength: 1, maxLength: 512 },
    mail_from: EMAIL,
  },
});

export function authRoutes(server: Server, deps: { log: Logger; guard: Guard; tokens: MachineTokens; people: PeopleRepo; bootstrap: BootstrapService }): void {
  const { log, guard, tokens } = deps;

  /**
   * The admin token at the console's door. Before the first owner exists it opens the
   * bootstrap; after that people sign in as themselves (break-glass arrives with sign-in).
   */
  server.post('/v1/login', route(log, async (req) => {
    const { token } = loginBody(req.body);
    if (!tokens.isAdmin(token)) throw new AppError('unauthorized');
    if ((await deps.people.count()) === 0) return [200, { bootstrap: true }];
    throw new AppError('use_email', 'sign in with your e-mail address');
  }));

  server.post('/v1/auth/bootstrap', route(log, async (req) => {
    const who = guard.adminToken(req);
    const person = await deps.bootstrap.bootstrap(bootstrapBody(req.body), who.actor);
    return [201, { user: { email: person.email, name: person.name, role: person.role } }];
  }));
}
