import type { Role } from '../identity/principal.ts';

/**
 * The single sign-on and directory settings (the `sso` settings document), as pure types and
 * defaults. Secrets (`client_secret`, `bind_password`) are held in the clear only in memory: the
 * store seals them (sso-store.ts) and nothing answers them (sso-settings.service.ts).
 */

export type DirectoryKind = 'active_directory' | 'openldap' | 'other';
export type Membership = 'memberOf' | 'member' | 'uniqueMember' | 'memberUid';

export interface OidcSettings {
  /** The provider's issuer; its `/.well-known/openid-configuration` is read from it. */
  issuer: string;
  client_id: string;
  client_secret: string | null;
  /** Asked for at the provider; `openid` is always among them. */
  scopes: string;
  /** The ID token claim that names the person's address (default `email`). */
  email_claim: string;
  /** The claim listing the person's groups (default `groups`); mapped like directory groups. */
  groups_claim: string;
}

export interface LdapSettings {
  /** Tried in order (failover): `ldaps://` as is, `ldap://` always with StartTLS, never plain. */
  urls: string[];
  /** The service's own read-only account. */
  bind_dn: string;
  bind_password: string | null;
  /** SHA-256 of the one certificate trusted beyond the system's authorities (`AB:CD:…`), or null. */
  fingerprint: string | null;
  kind: DirectoryKind;
  /** Where people and groups are looked for. */
  base_dn: string;
  /** What a sign-in name is looked up against. */
  login_attributes: string[];
  email_attribute: string;
  name_attribute: string;
  /** The directory's DNS domain: `name@domain`, and the address of people without one. */
  domain: string | null;
  /** The NetBIOS domain of `DOMAIN\name` (Active Directory). */
  netbios: string | null;
  person_filter: string;
  group_filter: string;
  /** People it matches are disabled: never signed in, suspended by the sync. */
  disabled_filter: string | null;
  membership: Membership;
  /** Paged searches of this size; 0: the server does not page. */
  page_size: number;
  /** The server's own size limit, if discovery found one (paged searches read past it). */
  size_limit: number | null;
}

export interface GroupMapping {
  /** A group by name, DN or ID (objectGUID, objectSid, entryUUID, gidNumber, or a provider's group ID). */
  group: string;
  role: Role;
  teams: string[];
  tags: string[];
}

export interface SsoSettings {
  /** The sign-in button's words, and the status's `auth.sso.label`. */
  label: string;
  /** Hand-added people still sign in by code or password beside directory people. */
  mixed_mode: boolean;
  sync_minutes: number;
  recheck_hours: number;
  oidc: OidcSettings | null;
  ldap: LdapSettings | null;
  mappings: GroupMapping[];
}

export const SSO_DEFAULTS: Readonly<SsoSettings> = Object.freeze({
  label: 'Single sign-on',
  mixed_mode: true,
  sync_minutes: 15,
  recheck_hours: 8,
  oidc: null,
  ldap: null,
  mappings: [],
});

export const OIDC_DEFAULTS = { scopes: 'openid email profile', email_claim: 'email', groups_claim: 'groups' } as const;

/** Where each kind of directory keeps people, their names and addresses, and who is disabled. */
export const KIND_DEFAULTS: Record<
  DirectoryKind,
  Pick<LdapSettings, 'login_attributes' | 'email_attribute' | 'name_attribute' | 'person_filter' | 'group_filter' | 'disabled_filter' | 'membership'>
> = {
  active_directory: {
    login_attributes: ['sAMAccountName', 'userPrincipalName', 'mail'],
    email_attribute: 'mail',
    name_attribute: 'displayName',
    person_filter: '(&(objectCategory=person)(objectClass=user))',
    group_filter: '(objectClass=group)',
    // ACCOUNTDISABLE (2) in userAccountControl, by the bitwise-AND matching rule.
    disabled_filter: '(userAccountControl:1.2.840.113556.1.4.803:=2)',
    membership: 'memberOf',
  },
  openldap: {
    login_attributes: ['uid', 'mail', 'cn'],
    email_attribute: 'mail',
    name_attribute: 'cn',
    person_filter: '(|(objectClass=inetOrgPerson)(objectClass=posixAccount))',
    group_filter: '(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames)(objectClass=posixGroup))',
    // The password policy overlay's permanent lock.
    disabled_filter: '(pwdAccountLockedTime=*)',
    membership: 'member',
  },
  other: {
    login_attributes: ['uid', 'sAMAccountName', 'userPrincipalName', 'mail', 'cn'],
    email_attribute: 'mail',
    name_attribute: 'cn',
    person_filter: '(|(objectClass=person)(objectClass=inetOrgPerson)(objectClass=posixAccount)(objectClass=user))',
    group_filter: '(|(objectClass=group)(objectClass=groupOfNames)(objectClass=groupOfUniqueNames)(objectClass=posixGroup))',
    disabled_filter: null,
    membership: 'member',
  },
};

export const LDAP_LIMITS = { page_size: 500, nested_depth: 8 } as const;

/** How the status names the ways in: `off`, `oidc`, `ldap`, or `both`. */
export type SsoMode = 'off' | 'oidc' | 'ldap' | 'both';

export function ssoMode(s: Pick<SsoSettings, 'oidc' | 'ldap'>): SsoMode {
  if (s.oidc !== null && s.ldap !== null) return 'both';
  if (s.oidc !== null) return 'oidc';
  if (s.ldap !== null) return 'ldap';
  return 'off';
}

/** Whether hand-added people may sign in by code or password: mixed mode, or no single sign-on at all. */
export function localSignIn(s: Pick<SsoSettings, 'oidc' | 'ldap' | 'mixed_mode'>): boolean {
  return s.mixed_mode || ssoMode(s) === 'off';
}
