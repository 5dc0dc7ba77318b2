import { isDeepStrictEqual } from 'node:util';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import { schemaValidator } from '../json-schema.ts';
import type { RecordEvent } from '../ledger/ledger.service.ts';
import type { Revisions } from '../settings/revisions.ts';
import type { Trx } from '../storage/db.ts';
import type { LocalSessionEnder } from './sso-settings.service.ts';
import { merge, withoutSecrets } from './sso-settings.service.ts';
import { ssoMode, SSO_DEFAULTS, type SsoSettings } from './sso-settings.ts';
import { SSO_SETTING, type ConsoleAddress, type SsoSettingsStore } from './sso-store.ts';

const STRINGS = { type: 'array', maxItems: 50, items: { type: 'string', maxLength: 1024 } };

/** The shape; merge() then checks every field as PUT /v1/settings/sso does. */
const carried = schemaValidator<{ sso: SsoSettings }>({
  type: 'object',
  additionalProperties: false,
  required: ['sso'],
  properties: {
    sso: {
      type: 'object',
      additionalProperties: false,
      required: ['label', 'mixed_mode', 'sync_minutes', 'recheck_hours', 'oidc', 'ldap', 'mappings'],
      properties: {
        label: { type: 'string', maxLength: 60 },
        mixed_mode: { type: 'boolean' },
        sync_minutes: { type: 'integer', minimum: 1, maximum: 1440 },
        recheck_hours: { type: 'integer', minimum: 1, maximum: 168 },
        oidc: {
          anyOf: [
            { type: 'null' },
            {
              type: 'object',
              required: ['issuer', 'client_id', 'client_secret'],
              properties: {
                issuer: { type: 'string', maxLength: 500 },
                client_id: { type: 'string', maxLength: 256 },
                client_secret: { anyOf: [{ type: 'string', maxLength: 1024 }, { type: 'null' }] },
              },
            },
          ],
        },
        ldap: {
          anyOf: [
            { type: 'null' },
            {
              type: 'object',
              required: ['urls', 'bind_dn', 'bind_password', 'base_dn'],
              properties: {
                urls: { ...STRINGS, minItems: 1, maxItems: 10 },
                bind_dn: { type: 'string', maxLength: 1024 },
                bind_password: { type: 'string', maxLength: 1024 },
                base_dn: { type: 'string', maxLength: 1024 },
                login_attributes: STRINGS,
              },
            },
          ],
        },
        mappings: {
          type: 'array',
          maxItems: 200,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['group', 'role', 'teams', 'tags'],
            properties: {
              group: { type: 'string', minLength: 1, maxLength: 1024 },
              role: { enum: ['owner', 'admin', 'viewer'] },
              teams: STRINGS,
              tags: STRINGS,
            },
          },
        },
      },
    },
  },
});

/**
 * The single sign-on part of the keychain (docs/keychain.md): the identity provider, the
 * directory, the group mappings, mixed mode and the intervals, secrets included. The console
 * address is this install's own and is never carried (register each install's callback address
 * at the provider). Applied, with the checks of PUT /v1/settings/sso: mixed mode off needs a way
 * in and an owner mapping, single sign-on needs this install's console address; turning mixed
 * mode off ends the sessions opened by code or password. `config.sso_saved` by the keychain.
 */
export class CarriedSso {
  readonly #store: SsoSettingsStore;
  readonly #address: ConsoleAddress;
  readonly #sessions: LocalSessionEnder;
  readonly #revisions: Revisions;
  readonly #clock: Clock;

  constructor(deps: { store: SsoSettingsStore; address: ConsoleAddress; sessions: LocalSessionEnder; revisions: Revisions; clock: Clock }) {
    this.#store = deps.store;
    this.#address = deps.address;
    this.#sessions = deps.sessions;
    this.#revisions = deps.revisions;
    this.#clock = deps.clock;
  }

  async export(trx?: Trx): Promise<{ sso: SsoSettings }> {
    return { sso: await this.#store.load(trx) };
  }

  async apply(trx: Trx, record: RecordEvent, data: unknown, actor: string): Promise<Record<string, unknown>> {
    const given = carried(data).sso;
    // From nothing stored, so that a secret is exactly the carried one (none kept from before).
    const next = merge({ ...SSO_DEFAULTS, mappings: [] }, given);
    if (!next.mixed_mode) {
      if (ssoMode(next) === 'off')
        throw new AppError('would_lock_out_owners', 'mixed mode off needs single sign-on or a directory: nobody could sign in otherwise');
      if (!next.mappings.some((m) => m.role === 'owner'))
        throw new AppError('would_lock_out_owners', 'mixed mode off needs a mapped group that gives the owner role');
    }
    const address = await this.#address.get(trx);
    if (next.oidc !== null && address === null)
      throw new AppError('console_address_required', 'single sign-on needs this install’s console address: the provider sends people back to it');
    const before = await this.#store.load(trx);
    if (isDeepStrictEqual(before, next)) return { changed: false };
    const at = this.#clock.now().toISOString();
    await this.#store.save(trx, next, at);
    await this.#revisions.bump(trx, SSO_SETTING, actor, at);
    let ended = 0;
    if (before.mixed_mode && !next.mixed_mode) {
      ended += await this.#sessions.endVia(trx, 'code', 'local_sign_in_off');
      ended += await this.#sessions.endVia(trx, 'password', 'local_sign_in_off');
    }
    await record({
      type: 'config.sso_saved',
      actor,
      reason: 'single sign-on settings carried by the keychain',
      data: { ...withoutSecrets(next), console_address: address, sessions_ended: ended, via: 'keychain' },
    });
    return { changed: true, sessions_ended: ended };
  }
}
