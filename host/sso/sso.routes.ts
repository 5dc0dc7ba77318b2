import type { Request, Response, Server } from 'restify';
import { AppError } from '../errors.ts';
import { readJson } from '../http/body.ts';
import type { ClientAddress } from '../http/client-address.ts';
import type { Guard } from '../http/guard.ts';
import { closeIfUnread } from '../http/body.ts';
import { optionalText, queryOf } from '../http/query.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import { takeBack } from '../settings/revisions.ts';
import type { DirectorySignIn } from './directory-sign-in.service.ts';
import type { DirectorySync } from './directory-sync.service.ts';
import type { OidcSignIn } from './oidc-sign-in.service.ts';
import type { DiscoverBody, SsoAdmin } from './sso-admin.service.ts';
import { SSO_GET_ONLY, type SsoInput, type SsoSettingsService } from './sso-settings.service.ts';

const TEXT = (max: number) => ({ type: 'string', minLength: 1, maxLength: max }) as const;
const DN = { type: 'string', minLength: 1, maxLength: 1024 } as const;
const ATTR = { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9-]{0,63}$' } as const;
const FILTER = { type: 'string', minLength: 3, maxLength: 2000, pattern: '^\\(.*\\)$' } as const;
const LABELS = { type: 'array', maxItems: 50, uniqueItems: true, items: TEXT(100) } as const;
const nullable = <T extends object>(schema: T) => ({ anyOf: [schema, { type: 'null' }] });

const settingsBody = bodyValidator<SsoInput & Record<string, unknown>>({
  type: 'object',
  additionalProperties: false,
  properties: {
    version: { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'null' }] },
    updated_at: {},
    updated_by: {},
    mode: {},
    console_address_source: {},
    last_sync: {},
    console_address: nullable({ type: 'string', maxLength: 500 }),
    label: { type: 'string', maxLength: 60 },
    mixed_mode: { type: 'boolean' },
    sync_minutes: { type: 'integer', minimum: 1, maximum: 1440 },
    recheck_hours: { type: 'integer', minimum: 1, maximum: 168 },
    oidc: nullable({
      type: 'object',
      additionalProperties: false,
      required: ['issuer', 'client_id'],
      properties: {
        issuer: TEXT(500),
        client_id: TEXT(256),
        client_secret: nullable({ type: 'string', maxLength: 1024 }),
        client_secret_set: {},
        redirect_uri: {},
        scopes: { type: 'string', maxLength: 500, pattern: '^[\\x21-\\x7e ]*$' },
        email_claim: { type: 'string', maxLength: 100, pattern: '^[A-Za-z0-9_:./-]*$' },
        groups_claim: { type: 'string', maxLength: 100, pattern: '^[A-Za-z0-9_:./-]*$' },
      },
    }),
    ldap: nullable({
      type: 'object',
      additionalProperties: false,
      required: ['urls', 'bind_dn'],
      properties: {
        urls: { type: 'array', minItems: 1, maxItems: 10, items: { type: 'string', minLength: 1, maxLength: 300, pattern: '^[^\\s]+$' } },
        bind_dn: DN,
        bind_password: nullable({ type: 'string', maxLength: 1024 }),
        bind_password_set: {},
        fingerprint: nullable({ type: 'string', maxLength: 200 }),
        kind: { enum: ['active_directory', 'openldap', 'other'] },
        base_dn: DN,
        login_attributes: { type: 'array', minItems: 1, maxItems: 10, uniqueItems: true, items: ATTR },
        email_attribute: ATTR,
        name_attribute: ATTR,
        domain: nullable({ type: 'string', maxLength: 253, pattern: '^[A-Za-z0-9.-]+$' }),
        netbios: nullable({ type: 'string', maxLength: 15, pattern: '^[A-Za-z0-9_.-]+$' }),
        person_filter: FILTER,
        group_filter: FILTER,
        disabled_filter: nullable(FILTER),
        membership: { enum: ['memberOf', 'member', 'uniqueMember', 'memberUid'] },
        page_size: { type: 'integer', minimum: 0, maximum: 5000 },
        size_limit: nullable({ type: 'integer', minimum: 0 }),
      },
    }),
    mappings: {
      type: 'array',
      maxItems: 200,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['group', 'role'],
        properties: { group: TEXT(1024), role: { enum: ['owner', 'admin', 'viewer'] }, teams: LABELS, tags: LABELS },
      },
    },
  },
});

const discoverBody = bodyValidator<DiscoverBody>({
  type: 'object',
  additionalProperties: false,
  required: ['addresses', 'bind_dn'],
  properties: {
    addresses: { type: 'array', minItems: 1, maxItems: 10, items: { type: 'string', minLength: 1, maxLength: 300, pattern: '^[^\\s]+$' } },
    bind_dn: DN,
    bind_password: { type: 'string', maxLength: 1024 },
    fingerprint: nullable({ type: 'string', maxLength: 200 }),
  },
});

const ldapBody = bodyValidator<{ username: string; password: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['username', 'password'],
  properties: { username: TEXT(256), password: { type: 'string', minLength: 1, maxLength: 1024 } },
});

const redeemBody = bodyValidator<{ ticket: string }>({
  type: 'object',
  additionalProperties: false,
  required: ['ticket'],
  properties: { ticket: { type: 'string', minLength: 1, maxLength: 200 } },
});

export interface SsoRouteDeps {
  log: Logger;
  guard: Guard;
  client: ClientAddress;
  settings: SsoSettingsService;
  admin: SsoAdmin;
  sync: DirectorySync;
  directory: DirectorySignIn;
  oidc: OidcSignIn;
}

/**
 * A browser navigation answered with a redirect, also when it fails: the console shows
 * `?sso_error=<code>` on its sign-in page rather than a JSON error.
 */
function redirect(log: Logger, fn: (req: Request) => Promise<string>) {
  return async (req: Request, res: Response): Promise<void> => {
    let to: string;
    try {
      to = await fn(req);
    } catch (e) {
      if (!(e instanceof AppError)) log.error({ err: e, path: req.getPath() }, 'single sign-on request failed');
      to = `/?sso_error=${e instanceof AppError ? e.code : 'internal'}`;
    }
    closeIfUnread(req, res);
    res.header('Location', to);
    res.header('Cache-Control', 'no-store');
    res.header('Referrer-Policy', 'no-referrer');
    res.send(302);
  };
}

/** Single sign-on and directory sign-in (no token needed), and their settings (admin). */
export function ssoRoutes(server: Server, d: SsoRouteDeps): void {
  const { log, guard, client } = d;

  server.get(
    '/v1/auth/sso/start',
    redirect(log, async (req) => d.oidc.start(optionalText(queryOf(req), 'return_to'), client.of(req))),
  );

  server.get(
    '/v1/auth/sso/callback',
    redirect(log, async (req) => d.oidc.callback((req.url ?? '').split('?')[1] ?? '', client.of(req))),
  );

  server.post(
    '/v1/auth/sso/redeem',
    route(log, async (req) => {
      const { ticket } = redeemBody(await readJson(req));
      return [200, await d.oidc.redeem(ticket, client.of(req))];
    }),
  );

  server.post(
    '/v1/auth/ldap',
    route(log, async (req) => {
      const { username, password } = ldapBody(await readJson(req));
      return [200, await d.directory.signIn(username, password, client.of(req))];
    }),
  );

  server.get(
    '/v1/settings/sso',
    route(log, async (req) => {
      await guard.withRole(req, 'admin');
      return [200, await d.settings.view()];
    }),
  );

  server.put(
    '/v1/settings/sso',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      const { doc, version } = takeBack(settingsBody(await readJson(req)), SSO_GET_ONLY);
      return [200, await d.settings.put(doc as SsoInput, who, version)];
    }),
  );

  server.get(
    '/v1/settings/sso/groups',
    route(
      log,
      async (req) => {
        await guard.withRole(req, 'admin');
        return [200, { groups: await d.admin.groups(optionalText(queryOf(req), 'q', 200) ?? '') }];
      },
      { query: ['q'] },
    ),
  );

  server.post(
    '/v1/settings/sso/discover',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      return [200, await d.admin.discover(discoverBody(await readJson(req)), who)];
    }),
  );

  server.post(
    '/v1/settings/sso/test',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      return [200, await d.admin.test(who)];
    }),
  );

  server.post(
    '/v1/settings/sso/sync',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      return [200, await d.sync.now(who.actor)];
    }),
  );
}
