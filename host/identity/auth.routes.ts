import type { Server } from 'restify';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import type { ClientAddress } from '../http/client-address.ts';
import type { AdminLoginService } from './admin-login.service.ts';
import type { BootstrapInput, BootstrapService } from './bootstrap.service.ts';
import type { PeopleRepo } from './people.repo.ts';
import type { SessionService } from './session.service.ts';
import type { SignInService } from './sign-in.service.ts';
import type { MachineTokens } from './tokens.ts';
import { readJson } from '../http/body.ts';

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
    provider: { type: 'string', enum: ['api', 'smtp'] },
    resend_key: { type: 'string', minLength: 1, maxLength: 512 },
    mail_from: EMAIL,
    // The same limits as PUT /v1/settings/mail (host/mail/mail.routes.ts).
    smtp_host: { type: 'string', minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9._:\\[\\]-]+$' },
    smtp_port: { type: 'integer', minimum: 1, maximum: 65535 },
    smtp_user: { type: 'string', minLength: 1, maxLength: 254 },
    smtp_password: { type: 'string', minLength: 1, maxLength: 1024 },
    smtp_security: { type: 'string', enum: ['starttls', 'ssl', 'none'] },
    // The console's address: http(s), no query, fragment or credentials (as PUT /v1/settings/sso).
    console_address: { type: 'string', maxLength: 500, pattern: '^https?://[^\\s?#@/]+(/[^\\s?#]*)?$' },
  },
});

const emailBody = bodyValidator<{ email: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['email'],
  properties: { email: EMAIL },
});

const verifyBody = bodyValidator<{ email: string; code: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['email', 'code'],
  properties: { email: EMAIL, code: { type: 'string', minLength: 1, maxLength: 32 } },
});

const passwordBody = bodyValidator<{ email: string; password: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['email', 'password'],
  properties: { email: EMAIL, password: { type: 'string', minLength: 1, maxLength: 200 } },
});

export interface AuthDeps {
  log: Logger;
  guard: Guard;
  tokens: MachineTokens;
  people: PeopleRepo;
  bootstrap: BootstrapService;
  signIn: SignInService;
  adminLogin: AdminLoginService;
  sessions: SessionService;
  client: ClientAddress;
}

export function authRoutes(server: Server, deps: AuthDeps): void {
  const { log, guard, tokens, signIn, adminLogin, client } = deps;

  /**
   * The admin token at the console's door. Before the first owner exists it opens the
   * bootstrap; after that it opens a break-glass session only while no code can be sent.
   * Wrong tokens are limited per client and recorded (admin-login.service.ts).
   */
  server.post(
    '/v1/login',
    route(log, async (req) => {
      const from = client.of(req);
      await adminLogin.gate(from);
      const { token } = loginBody(await readJson(req));
      if (!tokens.isAdmin(token)) await adminLogin.wrong(from);
      if ((await deps.people.count()) === 0) return [200, { bootstrap: true }];
      return [200, await adminLogin.login(from)];
    }),
  );

  /** Always the same 202, whether or not the address may sign in. */
  server.post(
    '/v1/auth/request',
    route(log, async (req) => {
      const { email } = emailBody(await readJson(req));
      await signIn.requestCode(email, client.of(req));
      return [202, { sent: true }];
    }),
  );

  server.post(
    '/v1/auth/verify',
    route(log, async (req) => {
      const { email, code } = verifyBody(await readJson(req));
      return [200, await signIn.verifyCode(email, code, client.of(req))];
    }),
  );

  server.post(
    '/v1/auth/password',
    route(log, async (req) => {
      const { email, password } = passwordBody(await readJson(req));
      return [200, await signIn.withPassword(email, password, client.of(req))];
    }),
  );

  server.post(
    '/v1/auth/logout',
    route(log, async (req) => {
      const who = await guard.session(req);
      await deps.sessions.logout(who.tokenHash);
      return [200, { signed_out: true }];
    }),
  );

  /** Who the token belongs to: a person, a break-glass session, or the admin token. */
  server.get(
    '/v1/auth/me',
    route(log, async (req) => {
      const who = await guard.bearer(req);
      const user = who.kind === 'session' && who.email !== null && who.profile !== null ? { email: who.email, role: who.role, ...who.profile } : null;
      return [200, { user, actor: who.actor, role: who.role, via: who.kind === 'session' ? (who.breakGlass ? 'break_glass' : 'session') : 'admin_token' }];
    }),
  );

  server.post(
    '/v1/auth/bootstrap',
    route(log, async (req) => {
      const who = guard.adminToken(req);
      const person = await deps.bootstrap.bootstrap(bootstrapBody(await readJson(req)), who.actor);
      return [201, { user: { email: person.email, name: person.name, role: person.role } }];
    }),
  );
}
