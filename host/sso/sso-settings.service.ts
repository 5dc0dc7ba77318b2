import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import { checkVersion, Revisions, type Revision } from '../settings/revisions.ts';
import type { Trx } from '../storage/db.ts';
import { candidateUrls, normaliseFingerprint } from './ldap-connection.ts';
import { ldapts } from './ldapts.ts';
import {
  KIND_DEFAULTS,
  LDAP_LIMITS,
  OIDC_DEFAULTS,
  SSO_DEFAULTS,
  ssoMode,
  type GroupMapping,
  type LdapSettings,
  type OidcSettings,
  type SsoSettings,
} from './sso-settings.ts';
import { SSO_SETTING, type ConsoleAddress, type SsoSettingsStore } from './sso-store.ts';
import type { SyncResult } from './directory-sync.service.ts';

/** The callback path the provider sends people back to, under the console address. */
export const CALLBACK_PATH = '/v1/auth/sso/callback';

/** What PUT takes: every field optional (omitted keeps), secrets write-only (blank or omitted keeps). */
export interface SsoInput {
  console_address?: string | null;
  label?: string;
  mixed_mode?: boolean;
  sync_minutes?: number;
  recheck_hours?: number;
  oidc?: (Partial<OidcSettings> & { issuer: string; client_id: string }) | null;
  ldap?: (Partial<LdapSettings> & { urls: string[]; bind_dn: string; base_dn?: string }) | null;
  mappings?: GroupMapping[];
}

/** Fields GET adds that PUT takes back and ignores (besides `version`, `updated_at`, `updated_by`). */
export const SSO_GET_ONLY = ['console_address_source', 'last_sync', 'mode'] as const;

export interface SsoView extends Revision {
  mode: ReturnType<typeof ssoMode>;
  console_address: string | null;
  /** `env` when SERVICE_PUBLIC_URL sets it (read-only), else `setting`. */
  console_address_source: 'env' | 'setting';
  label: string;
  mixed_mode: boolean;
  sync_minutes: number;
  recheck_hours: number;
  oidc: (Omit<OidcSettings, 'client_secret'> & { client_secret_set: boolean; redirect_uri: string | null }) | null;
  ldap: (Omit<LdapSettings, 'bind_password'> & { bind_password_set: boolean }) | null;
  mappings: GroupMapping[];
  last_sync: SyncResult | null;
}

/** What the sessions area does when mixed mode goes off (identity's SessionService). */
export interface LocalSessionEnder {
  endVia(trx: Trx, via: 'code' | 'password', reason: string): Promise<number>;
}

export interface SsoSettingsDeps {
  store: SsoSettingsStore;
  address: ConsoleAddress;
  sessions: LocalSessionEnder;
  /** The last sync's result (the sync's own settings document). */
  lastSync: (trx?: Trx) => Promise<SyncResult | null>;
  revisions: Revisions;
  ledger: Ledger;
  clock: Clock;
}

const sortedUnique = (xs: string[] | undefined): string[] => [...new Set((xs ?? []).map((x) => x.trim()).filter((x) => x !== ''))].sort();

/**
 * GET and PUT /v1/settings/sso: the identity provider, the directory, group mappings, mixed
 * mode, the sync and recheck intervals, and the console address. Secrets are write-only; a blank
 * one keeps the stored one, except that a changed provider (issuer, client) or directory (its
 * addresses, its account) needs its secret again, so that a stored secret is never sent
 * somewhere new by someone who does not know it. Mixed mode off needs a way in and a mapping
 * that gives the owner role (409 `would_lock_out_owners`), and ends the sessions opened by code
 * or password. Every change is `config.sso_saved` (without secrets).
 */
export class SsoSettingsService {
  readonly #d: SsoSettingsDeps;
  readonly #revisions: Revisions;

  constructor(deps: SsoSettingsDeps) {
    this.#d = deps;
    this.#revisions = deps.revisions;
  }

  async view(trx?: Trx): Promise<SsoView> {
    const s = await this.#d.store.load(trx);
    const address = await this.#d.address.get(trx);
    return {
      ...(await this.#revisions.get(SSO_SETTING, trx)),
      mode: ssoMode(s),
      console_address: address,
      console_address_source: this.#d.address.managed ? 'env' : 'setting',
      label: s.label,
      mixed_mode: s.mixed_mode,
      sync_minutes: s.sync_minutes,
      recheck_hours: s.recheck_hours,
      oidc:
        s.oidc === null
          ? null
          : (({ client_secret, ...rest }) => ({
              ...rest,
              client_secret_set: client_secret !== null,
              redirect_uri: address === null ? null : address + CALLBACK_PATH,
            }))(s.oidc),
      ldap: s.ldap === null ? null : (({ bind_password, ...rest }) => ({ ...rest, bind_password_set: bind_password !== null }))(s.ldap),
      mappings: s.mappings,
      last_sync: await this.#d.lastSync(trx),
    };
  }

  async put(input: SsoInput, by: Principal, expectedVersion: number | null): Promise<SsoView> {
    const now = this.#d.clock.now();
    const at = now.toISOString();
    await this.#d.ledger.transact(
      async (trx, record) => {
        checkVersion(expectedVersion, (await this.#revisions.get(SSO_SETTING, trx)).version, 'the single sign-on settings');
        const before = await this.#d.store.load(trx);
        const next = merge(before, input);
        const addressBefore = await this.#d.address.get(trx);
        let address = addressBefore;
        if (input.console_address !== undefined && (input.console_address?.replace(/\/+$/, '') ?? null) !== addressBefore) {
          if (this.#d.address.managed) throw new AppError('console_address_managed', 'SERVICE_PUBLIC_URL sets the console address: change it there');
          address = input.console_address === null ? null : checkAddress(input.console_address);
        }
        if (!next.mixed_mode) {
          if (ssoMode(next) === 'off')
            throw new AppError('would_lock_out_owners', 'mixed mode off needs single sign-on or a directory: nobody could sign in otherwise');
          if (!next.mappings.some((m) => m.role === 'owner'))
            throw new AppError('would_lock_out_owners', 'mixed mode off needs a mapped group that gives the owner role');
        }
        if (next.oidc !== null && address === null)
          throw new AppError('console_address_required', 'single sign-on needs the console address: the provider sends people back to it');
        const changed = JSON.stringify(before) !== JSON.stringify(next) || address !== addressBefore;
        if (!changed) return;
        await this.#d.store.save(trx, next, at);
        if (address !== addressBefore) await this.#d.address.save(trx, address, at);
        await this.#revisions.bump(trx, SSO_SETTING, by.actor, at);
        let ended = 0;
        if (before.mixed_mode && !next.mixed_mode) {
          ended += await this.#d.sessions.endVia(trx, 'code', 'local_sign_in_off');
          ended += await this.#d.sessions.endVia(trx, 'password', 'local_sign_in_off');
        }
        await record({
          type: 'config.sso_saved',
          actor: by.actor,
          reason: 'single sign-on settings saved',
          data: { ...withoutSecrets(next), console_address: address, sessions_ended: ended },
        });
      },
      { headFirst: true },
    );
    return this.view();
  }
}

/** The settings as the ledger may hold them: every secret only as whether it is set. */
export function withoutSecrets(s: SsoSettings): Record<string, unknown> {
  return {
    ...s,
    oidc: s.oidc === null ? null : (({ client_secret, ...rest }) => ({ ...rest, client_secret_set: client_secret !== null }))(s.oidc),
    ldap: s.ldap === null ? null : (({ bind_password, ...rest }) => ({ ...rest, bind_password_set: bind_password !== null }))(s.ldap),
  };
}

function checkAddress(raw: string): string {
  const url = raw.trim().replace(/\/+$/, '');
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new AppError('invalid_body', 'console_address must be an http(s) address');
  }
  if (!/^https?:$/.test(u.protocol) || u.search !== '' || u.hash !== '' || u.username !== '' || u.password !== '') {
    throw new AppError('invalid_body', 'console_address must be an http(s) address without query, fragment or credentials');
  }
  return url;
}

function checkFilter(name: string, filter: string | null): void {
  if (filter === null) return;
  try {
    ldapts().FilterParser.parseString(filter);
  } catch (e) {
    throw new AppError('invalid_body', `ldap.${name} is not an LDAP filter: ${(e as Error).message}`);
  }
}

/** The stored settings with `input` applied (see SsoSettingsService for the rules). */
export function merge(before: SsoSettings, input: SsoInput): SsoSettings {
  const next: SsoSettings = {
    label: input.label?.trim() || before.label || SSO_DEFAULTS.label,
    mixed_mode: input.mixed_mode ?? before.mixed_mode,
    sync_minutes: input.sync_minutes ?? before.sync_minutes,
    recheck_hours: input.recheck_hours ?? before.recheck_hours,
    oidc: before.oidc,
    ldap: before.ldap,
    mappings:
      input.mappings === undefined
        ? before.mappings
        : input.mappings.map((m) => ({ group: m.group.trim(), role: m.role, teams: sortedUnique(m.teams), tags: sortedUnique(m.tags) })),
  };
  if (input.oidc === null) next.oidc = null;
  else if (input.oidc !== undefined) {
    const o = input.oidc;
    const issuer = o.issuer.trim().replace(/\/+$/, '');
    let u: URL;
    try {
      u = new URL(issuer);
    } catch {
      throw new AppError('invalid_body', 'oidc.issuer must be an https address');
    }
    if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopback(u.hostname))) {
      throw new AppError('invalid_body', 'oidc.issuer must be an https address (http only on this machine, for tests)');
    }
    const sameProvider = before.oidc !== null && before.oidc.issuer === issuer && before.oidc.client_id === o.client_id;
    const secret = o.client_secret ? o.client_secret : sameProvider ? before.oidc!.client_secret : null;
    if (!sameProvider && before.oidc?.client_secret != null && !o.client_secret) {
      throw new AppError('secret_required', 'a changed issuer or client needs its client_secret again');
    }
    const scopes = o.scopes?.trim() || before.oidc?.scopes || OIDC_DEFAULTS.scopes;
    next.oidc = {
      issuer,
      client_id: o.client_id,
      client_secret: secret,
      scopes: scopes.split(/\s+/).includes('openid') ? scopes : `openid ${scopes}`,
      email_claim: o.email_claim?.trim() || before.oidc?.email_claim || OIDC_DEFAULTS.email_claim,
      groups_claim: o.groups_claim?.trim() || before.oidc?.groups_claim || OIDC_DEFAULTS.groups_claim,
    };
  }
  if (input.ldap === null) next.ldap = null;
  else if (input.ldap !== undefined) next.ldap = mergeLdap(before.ldap, input.ldap);
  return next;
}

function mergeLdap(before: LdapSettings | null, l: NonNullable<SsoInput['ldap']>): LdapSettings {
  const urls = candidateUrls(l.urls);
  if (urls.length === 0) throw new AppError('invalid_body', 'ldap.urls needs at least one address');
  for (const url of urls) {
    try {
      const u = new URL(url);
      if (u.pathname !== '' && u.pathname !== '/') throw new Error('path');
    } catch {
      throw new AppError('invalid_body', `ldap.urls: ${url} is not an ldaps:// or ldap:// address`);
    }
  }
  const sameDirectory = before !== null && JSON.stringify(before.urls) === JSON.stringify(urls) && before.bind_dn === l.bind_dn;
  if (!sameDirectory && before?.bind_password != null && !l.bind_password) {
    throw new AppError('secret_required', 'changed directory addresses or account need the bind_password again');
  }
  let fingerprint: string | null = before?.fingerprint ?? null;
  if (l.fingerprint !== undefined) {
    fingerprint = l.fingerprint === null || l.fingerprint === '' ? null : normaliseFingerprint(l.fingerprint);
    if (l.fingerprint !== null && l.fingerprint !== '' && fingerprint === null)
      throw new AppError('invalid_body', 'ldap.fingerprint must be a SHA-256 fingerprint (64 hex digits)');
  }
  const kind = l.kind ?? before?.kind ?? 'other';
  const defaults = KIND_DEFAULTS[kind];
  const pick = <K extends keyof LdapSettings>(k: K, fallback: LdapSettings[K]): LdapSettings[K] =>
    l[k] !== undefined ? (l[k] as LdapSettings[K]) : (before?.[k] ?? fallback);
  const next: LdapSettings = {
    urls,
    bind_dn: l.bind_dn,
    bind_password: l.bind_password ? l.bind_password : sameDirectory ? before.bind_password : null,
    fingerprint,
    kind,
    base_dn: pick('base_dn', ''),
    login_attributes: pick('login_attributes', defaults.login_attributes),
    email_attribute: pick('email_attribute', defaults.email_attribute),
    name_attribute: pick('name_attribute', defaults.name_attribute),
    domain: pick('domain', null),
    netbios: pick('netbios', null),
    person_filter: pick('person_filter', defaults.person_filter),
    group_filter: pick('group_filter', defaults.group_filter),
    disabled_filter: pick('disabled_filter', defaults.disabled_filter),
    membership: pick('membership', defaults.membership),
    page_size: pick('page_size', LDAP_LIMITS.page_size),
    size_limit: pick('size_limit', null),
  };
  if (next.base_dn.trim() === '') throw new AppError('invalid_body', 'ldap.base_dn is needed (discovery finds it)');
  if (next.bind_password === null) throw new AppError('secret_required', 'ldap.bind_password is needed');
  checkFilter('person_filter', next.person_filter);
  checkFilter('group_filter', next.group_filter);
  checkFilter('disabled_filter', next.disabled_filter);
  return next;
}

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}
