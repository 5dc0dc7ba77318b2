import type { SecretCipher } from '../secrets/cipher.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { Trx } from '../storage/db.ts';
import { localSignIn, ssoMode, SSO_DEFAULTS, type SsoMode, type SsoSettings } from './sso-settings.ts';

/** What anyone may know of the settings (GET /v1/status `auth.sso`): no address, no secret. */
export interface SsoSummary {
  mode: SsoMode;
  label: string | null;
  /** Whether hand-added people sign in by code or password. */
  local: boolean;
}

/** The settings documents the single sign-on area owns. */
export const SSO_SETTING = 'sso';
export const CONSOLE_ADDRESS_SETTING = 'console_address';

/**
 * The console's address as people reach it: the single sign-on callback's base, and the links in
 * e-mails and webhooks. `SERVICE_PUBLIC_URL`, when set, is the value and the setting is read-only.
 */
export interface ConsoleAddress {
  /** The address without a trailing slash, or null while none is known. */
  get(trx?: Trx): Promise<string | null>;
  /** True when SERVICE_PUBLIC_URL sets it (the API answers 409 to a change). */
  readonly managed: boolean;
  /** Stores the address (not when managed). */
  save(trx: Trx, url: string | null, at: string): Promise<void>;
}

/** The stored `sso` document: the settings with their secrets sealed. */
type Stored = SsoSettings;

/** The settings store with secrets sealed at rest; only this file seals and opens them. */
export class SsoSettingsStore {
  readonly #settings: SettingsStore;
  readonly #cipher: SecretCipher;

  constructor(deps: { settings: SettingsStore; cipher: SecretCipher }) {
    this.#settings = deps.settings;
    this.#cipher = deps.cipher;
  }

  /** The settings in force (defaults while none were saved), secrets opened. */
  async load(trx?: Trx): Promise<SsoSettings> {
    const s = await this.#settings.get<Partial<Stored>>(SSO_SETTING, trx);
    if (s === null) return { ...SSO_DEFAULTS, mappings: [] };
    const merged: SsoSettings = { ...SSO_DEFAULTS, ...s, mappings: s.mappings ?? [] };
    return {
      ...merged,
      oidc: merged.oidc === null ? null : { ...merged.oidc, client_secret: this.#open(merged.oidc.client_secret) },
      ldap: merged.ldap === null ? null : { ...merged.ldap, bind_password: this.#open(merged.ldap.bind_password) },
    };
  }

  /** The summary, read without opening any secret. */
  async summary(trx?: Trx): Promise<SsoSummary> {
    const s = { ...SSO_DEFAULTS, ...((await this.#settings.get<Partial<Stored>>(SSO_SETTING, trx)) ?? {}) };
    const mode = ssoMode(s);
    return { mode, label: mode === 'off' ? null : s.label, local: localSignIn(s) };
  }

  async save(trx: Trx, s: SsoSettings, at: string): Promise<void> {
    const stored: Stored = {
      ...s,
      oidc: s.oidc === null ? null : { ...s.oidc, client_secret: this.#seal(s.oidc.client_secret) },
      ldap: s.ldap === null ? null : { ...s.ldap, bind_password: this.#seal(s.ldap.bind_password) },
    };
    await this.#settings.put(trx, SSO_SETTING, stored, at);
  }

  #seal(plain: string | null): string | null {
    return plain === null || plain === '' ? null : this.#cipher.encrypt(plain);
  }

  #open(sealed: string | null | undefined): string | null {
    return sealed === null || sealed === undefined || sealed === '' ? null : this.#cipher.decrypt(sealed);
  }
}

/**
 * The single sign-on area's lower half, built before the areas that read it: the settings store,
 * the console address (notifications link to it), and whether hand-added people may sign in by
 * code or password (the identity area asks on every such sign-in).
 */
export interface SsoStore {
  readonly settings: SsoSettingsStore;
  readonly consoleAddress: ConsoleAddress;
  localSignIn(trx?: Trx): Promise<boolean>;
}

export function createSsoStore(d: { settings: SettingsStore; cipher: SecretCipher; publicUrl: string | null }): SsoStore {
  const store = new SsoSettingsStore({ settings: d.settings, cipher: d.cipher });
  const consoleAddress: ConsoleAddress = {
    managed: d.publicUrl !== null,
    get: async (trx) => d.publicUrl ?? (await d.settings.get<{ url: string | null }>(CONSOLE_ADDRESS_SETTING, trx))?.url ?? null,
    save: async (trx, url, at) => {
      if (d.publicUrl !== null) return;
      await d.settings.put(trx, CONSOLE_ADDRESS_SETTING, { url: url === null ? null : url.replace(/\/+$/, '') }, at);
    },
  };
  return {
    settings: store,
    consoleAddress,
    localSignIn: async (trx) => (await store.summary(trx)).local,
  };
}
