import type { TestApp } from './app.ts';
import { READER_DN, READER_PASSWORD, SUFFIX, type RunningSlapd } from './slapd.ts';

/** The mappings the directory tests use: owners, admins (a team), nest8 (8 deep: counts), nest9 (9 deep: ignored), ops (memberUid). */
export const MAPPINGS = [
  { group: 'oncall-owners', role: 'owner' },
  { group: `cn=oncall-admins,ou=groups,${SUFFIX}`, role: 'admin', teams: ['payments'], tags: ['pager'] },
  { group: 'nest8', role: 'viewer', tags: ['nested'] },
  { group: 'nest9', role: 'admin', teams: ['too-deep'] },
  { group: 'ops', role: 'viewer', teams: ['ops'] },
];

/** The `ldap` part of PUT /v1/settings/sso for the test slapd (trusted by its fingerprint). */
export function ldapSettings(slapd: RunningSlapd, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    urls: [slapd.ldaps, slapd.ldap],
    bind_dn: READER_DN,
    bind_password: READER_PASSWORD,
    fingerprint: slapd.fingerprint,
    kind: 'openldap',
    base_dn: SUFFIX,
    domain: 'bank.example',
    ...extra,
  };
}

/** Saves directory settings with MAPPINGS (or `mappings`); throws on anything but 200. */
export async function configureDirectory(ta: TestApp, slapd: RunningSlapd, over: Record<string, unknown> = {}): Promise<any> {
  const res = await ta.call('PUT', '/v1/settings/sso', { body: { ldap: ldapSettings(slapd), mappings: MAPPINGS, ...over } });
  if (res.status !== 200) throw new Error(`saving the sso settings: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Directory sign-in; answers status and body. */
export async function ldapSignIn(ta: TestApp, username: string, password: string, client?: string): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (client !== undefined) headers['x-forwarded-for'] = client;
  const res = await fetch(`${ta.base}/v1/auth/ldap`, { method: 'POST', headers, body: JSON.stringify({ username, password }) });
  return { status: res.status, body: await res.json() };
}

export async function ledgerOf(ta: TestApp, type: string): Promise<Array<{ type: string; actor: string; reason: string; data: any }>> {
  return (await ta.call('GET', `/v1/ledger?type=${type}&order=asc&limit=2000`)).body.events;
}
