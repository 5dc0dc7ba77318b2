import type { Server } from 'restify';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import type { MailInput, MailService } from './mail.service.ts';
import { readJson, readBodyOrEmpty } from '../http/body.ts';

const EMAIL = { type: 'string', format: 'email', maxLength: 254 } as const;
const nullable = <T extends Record<string, unknown>>(schema: T) => ({ anyOf: [schema, { type: 'null' }] });

/**
 * The PUT body: the settings, and what GET adds (taken back and ignored, except that `version`
 * is checked; a secret's `*_set` keeps the secret: see MailService.put).
 */
const putBody = bodyValidator<MailInput>({
  type: 'object',
  additionalProperties: false,
  properties: {
    version: { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'null' }] },
    source: {},
    updated_at: {},
    updated_by: {},
    resend_key_set: {},
    smtp_password_set: {},
    last_send: {},
    break_glass: {},
    provider: { anyOf: [{ type: 'string', enum: ['api', 'smtp'] }, { type: 'null' }] },
    mail_from: nullable(EMAIL),
    resend_key: nullable({ type: 'string', maxLength: 512, pattern: '^\\S*$' }),
    smtp_host: nullable({ type: 'string', minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9._:\\[\\]-]+$' }),
    smtp_port: { type: 'integer', minimum: 1, maximum: 65535 },
    smtp_user: nullable({ type: 'string', minLength: 1, maxLength: 254 }),
    smtp_password: nullable({ type: 'string', maxLength: 1024 }),
    smtp_security: { type: 'string', enum: ['starttls', 'ssl', 'none'] },
  },
});

const testBody = bodyValidator<{ to?: string }>({
  type: 'object',
  additionalProperties: false,
  properties: { to: EMAIL },
});

/** GET /v1/settings/mail (viewer), PUT /v1/settings/mail (admin), POST /v1/settings/mail/test (admin). */
export function mailRoutes(server: Server, deps: { log: Logger; guard: Guard; mail: MailService }): void {
  const { log, guard, mail } = deps;

  server.get(
    '/v1/settings/mail',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      return [200, await mail.get()];
    }),
  );

  server.put(
    '/v1/settings/mail',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      return [200, await mail.put(putBody(await readJson(req)), who)];
    }),
  );

  server.post(
    '/v1/settings/mail/test',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      const { to } = testBody(await readBodyOrEmpty(req));
      return [200, await mail.test(who, to)];
    }),
  );
}
