import type { Request, Server } from 'restify';
import { readBodyOrEmpty, readJson } from '../http/body.ts';
import type { ClientAddress } from '../http/client-address.ts';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { RateLimits } from '../identity/rate-limits.ts';
import type { Role } from '../identity/principal.ts';
import type { Logger } from '../log.ts';
import type { KeychainService } from './keychain.service.ts';
import { PARTS, type Part } from './parts.ts';

const NAME = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$' };
const ADDRESS = { anyOf: [{ type: 'string', minLength: 1, maxLength: 500 }, { type: 'null' }] };

const homeBody = bodyValidator<{ take_over?: boolean; name?: string; address?: string | null }>({
  type: 'object',
  additionalProperties: false,
  properties: { take_over: { type: 'boolean' }, name: NAME, address: ADDRESS },
});
const joinBody = bodyValidator<{ home: string; site_key: string; name?: string; address?: string | null }>({
  type: 'object',
  additionalProperties: false,
  required: ['home', 'site_key'],
  properties: {
    home: { type: 'string', minLength: 1, maxLength: 500 },
    site_key: { type: 'string', minLength: 1, maxLength: 200 },
    name: NAME,
    address: ADDRESS,
  },
});
const scopeBody = bodyValidator<{ parts: Part[] }>({
  type: 'object',
  additionalProperties: false,
  required: ['parts'],
  properties: { parts: { type: 'array', uniqueItems: true, maxItems: PARTS.length, items: { enum: [...PARTS] } } },
});
const ownBody = bodyValidator<{ install: string; part: Part; own: boolean }>({
  type: 'object',
  additionalProperties: false,
  required: ['install', 'part', 'own'],
  properties: { install: { type: 'string', minLength: 1, maxLength: 100 }, part: { enum: [...PARTS] }, own: { type: 'boolean' } },
});

/**
 * The keychain's endpoints for people (docs/keychain.md): admins read it and sync; owners make
 * the home, site keys, the scope, own values, joins, take-overs, removals and leaving. All answer 503
 * until the install is operating and 403 `licence_tier` on a licence without the keychain.
 * Between installs: peerRoutes, below.
 */
export function keychainRoutes(server: Server, deps: { log: Logger; guard: Guard; keychain: KeychainService }): void {
  const { log, guard, keychain } = deps;
  const allowed = async (req: Request, role: Role) => {
    const who = await guard.withRole(req, role);
    await guard.operating();
    return who;
  };

  server.get(
    '/v1/keychain',
    route(log, async (req) => {
      await allowed(req, 'admin');
      return [200, await keychain.view()];
    }),
  );

  server.post(
    '/v1/keychain/home',
    route(log, async (req) => {
      const who = await allowed(req, 'owner');
      await keychain.makeHome(who, homeBody(await readBodyOrEmpty(req)));
      return [200, await keychain.view()];
    }),
  );

  server.post(
    '/v1/keychain/site-keys',
    route(log, async (req) => {
      const who = await allowed(req, 'owner');
      return [201, await keychain.home.siteKey(who)];
    }),
  );

  server.post(
    '/v1/keychain/join',
    route(log, async (req) => {
      const who = await allowed(req, 'owner');
      const sync = await keychain.join(who, joinBody(await readJson(req)));
      return [200, { ...(await keychain.view()), sync }];
    }),
  );

  server.post(
    '/v1/keychain/scope',
    route(log, async (req) => {
      const who = await allowed(req, 'owner');
      await keychain.home.scope(who, scopeBody(await readJson(req)).parts);
      return [200, await keychain.view()];
    }),
  );

  server.post(
    '/v1/keychain/own',
    route(log, async (req) => {
      const who = await allowed(req, 'owner');
      const b = ownBody(await readJson(req));
      await keychain.home.own(who, b.install, b.part, b.own);
      return [200, await keychain.view()];
    }),
  );

  server.post(
    '/v1/keychain/sync',
    route(log, async (req) => {
      await allowed(req, 'admin');
      const sync = await keychain.sync();
      return [200, { ...(await keychain.view()), sync }];
    }),
  );

  server.del(
    '/v1/keychain',
    route(log, async (req) => {
      const who = await allowed(req, 'owner');
      await keychain.leave(who);
      return [200, await keychain.view()];
    }),
  );

  server.del(
    '/v1/keychain/members/:install',
    route(log, async (req) => {
      const who = await allowed(req, 'owner');
      return [200, await keychain.home.remove(who, String(req.params?.install ?? ''))];
    }),
  );
}

/**
 * Between installs of a keychain (docs/keychain.md, "Between installs"): no bearer token; every
 * message is signed (the home's answers by the keychain key, an install's requests by its
 * identity key) and checked before anything in it is used. Pairings are limited to 20 per client
 * address in 10 minutes.
 */
export function peerRoutes(server: Server, deps: { log: Logger; guard: Guard; keychain: KeychainService; limits: RateLimits; client: ClientAddress }): void {
  const { log, guard, keychain, limits, client } = deps;

  server.get(
    '/v1/keychain/peer/hello',
    route(log, async () => {
      await guard.operating();
      return [200, await keychain.pairing.hello()];
    }),
  );

  server.post(
    '/v1/keychain/peer/pair',
    route(log, async (req) => {
      await guard.operating();
      const from = client.of(req);
      await limits.take([['keychain_pair_client', from]]);
      return [201, await keychain.pairing.pair(await readJson(req), from)];
    }),
  );

  server.post(
    '/v1/keychain/peer/poll',
    route(log, async (req) => {
      await guard.operating();
      return keychain.polls.answer(await readJson(req));
    }),
  );

  server.post(
    '/v1/keychain/peer/take-over',
    route(log, async (req) => {
      await guard.operating();
      return [200, await keychain.takeOver.receive(await readJson(req))];
    }),
  );
}
