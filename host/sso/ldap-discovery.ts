import type { Client, Entry } from 'ldapts';
import { BindRefused, candidateUrls, close, connect, DirectoryUnreachable, type Attempt, type CertificateInfo } from './ldap-connection.ts';
import { Directory } from './directory.ts';
import { escapeFilter, first, values } from './ldap-entries.ts';
import { KIND_DEFAULTS, LDAP_LIMITS, type DirectoryKind, type LdapSettings } from './sso-settings.ts';

/** What POST /v1/settings/sso/discover is given: addresses (failover in order) and the service's account. */
export interface DiscoverInput {
  addresses: string[];
  bind_dn: string;
  bind_password: string;
  fingerprint: string | null;
}

export type Discovery =
  | {
      ok: true;
      /** Settings worked out, ready to save (the password is not in them). */
      found: Omit<LdapSettings, 'bind_password'>;
      /** Each address tried, in order, and how it answered. */
      tried: Attempt[];
      vendor: string | null;
      naming_contexts: string[];
      /** Other servers of the directory that could take over (AD's domain controllers). */
      failover: string[];
      paging: boolean;
      referrals: string[];
      people: number;
      groups: number;
    }
  | { ok: false; problem: 'untrusted_certificate'; certificate: CertificateInfo; tried: Attempt[] }
  | { ok: false; problem: 'unreachable' | 'bind_refused' | 'failed'; message: string; tried: Attempt[] };

const PAGED_RESULTS = '1.2.840.113556.1.4.319';
const ROOT_ATTRS = [
  'namingContexts',
  'defaultNamingContext',
  'rootDomainNamingContext',
  'configurationNamingContext',
  'supportedControl',
  'vendorName',
  'vendorVersion',
  'objectClass',
  'structuralObjectClass',
  'dnsHostName',
  'domainFunctionality',
];

function kindOf(root: Entry): DirectoryKind {
  if (first(root, 'domainFunctionality') !== null || first(root, 'rootDomainNamingContext') !== null) return 'active_directory';
  const marks = [...values(root, 'objectClass'), ...values(root, 'structuralObjectClass'), first(root, 'vendorName') ?? ''].join(' ');
  return /openldap/i.test(marks) ? 'openldap' : 'other';
}

/** `dc=bank,dc=example` → `bank.example`; null when the DN has no DC part. */
export function dnsOf(dn: string): string | null {
  const dcs = dn
    .split(',')
    .map((p) => /^\s*dc\s*=\s*(.+?)\s*$/i.exec(p)?.[1])
    .filter((x): x is string => x !== undefined);
  return dcs.length === 0 ? null : dcs.join('.').toLowerCase();
}

function dcPart(dn: string): string | null {
  const parts = dn.split(',').filter((p) => /^\s*dc\s*=/i.test(p));
  return parts.length === 0 ? null : parts.map((p) => p.trim()).join(',');
}

/**
 * Tries the addresses and the account without saving anything, and works out what the
 * directory is: its kind from the root entry, where people are, how to look them up, their
 * address, group membership, failover names, paging and the server's size limit, referrals.
 * An untrusted certificate comes back with what a person needs to trust exactly it.
 */
export async function discover(input: DiscoverInput, timeoutMs: number): Promise<Discovery> {
  const urls = candidateUrls(input.addresses);
  let conn;
  try {
    conn = await connect(urls, { fingerprint: input.fingerprint, timeoutMs, bind: { dn: input.bind_dn, password: input.bind_password } });
  } catch (err) {
    if (err instanceof BindRefused) return { ok: false, problem: 'bind_refused', message: err.message, tried: err.tried };
    if (err instanceof DirectoryUnreachable) {
      const cert = err.tried.find((t) => t.certificate !== undefined);
      if (cert?.certificate !== undefined) return { ok: false, problem: 'untrusted_certificate', certificate: cert.certificate, tried: err.tried };
      return { ok: false, problem: 'unreachable', message: err.message, tried: err.tried };
    }
    throw err;
  }
  try {
    // The other addresses given: each tried too, so the answer says which would take over.
    const tried = [...conn.tried];
    for (const url of urls.slice(urls.indexOf(conn.url) + 1)) {
      try {
        const other = await connect([url], { fingerprint: input.fingerprint, timeoutMs });
        tried.push(...other.tried);
        await close(other);
      } catch (err) {
        if (err instanceof DirectoryUnreachable) tried.push(...err.tried);
      }
    }
    const described = await describe(conn.client, input, conn.url);
    // Every address that answered, in the order given: the saved settings fail over along them.
    described.found.urls = tried.filter((t) => t.ok).map((t) => t.url);
    return { ...described, tried };
  } catch (err) {
    return { ok: false, problem: 'failed', message: err instanceof Error ? err.message : String(err), tried: conn.tried };
  } finally {
    await close(conn);
  }
}

async function describe(client: Client, input: DiscoverInput, url: string): Promise<Extract<Discovery, { ok: true }>> {
  const [root] = (await client.search('', { scope: 'base', filter: '(objectClass=*)', attributes: ROOT_ATTRS })).searchEntries;
  if (root === undefined) throw new Error('the directory did not answer its root entry');
  const kind = kindOf(root);
  const contexts = values(root, 'namingContexts');
  const base = first(root, 'defaultNamingContext') ?? contexts.find((c) => !/^cn=(config|schema|monitor)/i.test(c)) ?? dcPart(input.bind_dn);
  if (base === null) throw new Error('no naming context: give the base DN in the settings');
  const paging = values(root, 'supportedControl').includes(PAGED_RESULTS);
  const domain = dnsOf(base);
  const defaults = KIND_DEFAULTS[kind];
  let netbios: string | null = null;
  const failover: string[] = [];
  if (kind === 'active_directory') {
    const config = first(root, 'configurationNamingContext');
    if (config !== null) {
      const [cross] = (
        await client.search(`CN=Partitions,${config}`, {
          scope: 'one',
          filter: `(&(objectClass=crossRef)(nCName=${escapeFilter(base)}))`,
          attributes: ['nETBIOSName'],
        })
      ).searchEntries;
      netbios = cross === undefined ? null : first(cross, 'nETBIOSName');
    }
    // Domain controllers: computers with SERVER_TRUST_ACCOUNT (8192).
    const dcs = await client.search(base, {
      scope: 'sub',
      filter: '(&(objectCategory=computer)(userAccountControl:1.2.840.113556.1.4.803:=8192))',
      attributes: ['dNSHostName'],
      sizeLimit: 100,
    });
    for (const e of dcs.searchEntries) {
      const host = first(e, 'dNSHostName');
      if (host !== null) failover.push(host.toLowerCase());
    }
  }
  const found: Omit<LdapSettings, 'bind_password'> = {
    urls: [url],
    bind_dn: input.bind_dn,
    fingerprint: input.fingerprint,
    kind,
    base_dn: base,
    ...defaults,
    domain,
    netbios,
    page_size: paging ? LDAP_LIMITS.page_size : 0,
    size_limit: null,
  };
  // Which lookup attributes and address attribute the people here carry.
  const directory = new Directory(client, { ...found, bind_password: null });
  const people = await directory.allPeople();
  const sample = (await client.search(base, { scope: 'sub', filter: found.person_filter, attributes: ['*', 'memberOf'], sizeLimit: 25 })).searchEntries;
  const has = (attr: string) => sample.some((e) => first(e, attr) !== null);
  const lookups = ['sAMAccountName', 'userPrincipalName', 'uid', 'mail', 'cn'].filter(has);
  if (lookups.length > 0) found.login_attributes = lookups;
  found.email_attribute = has('mail') ? 'mail' : has('userPrincipalName') ? 'userPrincipalName' : 'mail';
  found.name_attribute = has('displayName') ? 'displayName' : 'cn';
  if (sample.some((e) => values(e, 'memberOf').length > 0)) found.membership = 'memberOf';
  else {
    const groupsOf = async (f: string) => (await client.search(base, { scope: 'sub', filter: f, attributes: ['1.1'], sizeLimit: 1 })).searchEntries.length > 0;
    if (await groupsOf('(member=*)')) found.membership = 'member';
    else if (await groupsOf('(uniqueMember=*)')) found.membership = 'uniqueMember';
    else if (await groupsOf('(memberUid=*)')) found.membership = 'memberUid';
  }
  // The server's own size limit: an unpaged search of everyone stops at it.
  const unpaged = await client.search(base, { scope: 'sub', filter: found.person_filter, attributes: ['1.1'], sizeLimit: people.length + 1 });
  if (unpaged.searchEntries.length < people.length) found.size_limit = unpaged.searchEntries.length;
  const groups = (
    await client.search(base, {
      scope: 'sub',
      filter: found.group_filter,
      attributes: ['1.1'],
      ...(paging ? { paged: { pageSize: LDAP_LIMITS.page_size } } : {}),
    })
  ).searchEntries;
  return {
    ok: true,
    found,
    tried: [],
    vendor: [first(root, 'vendorName'), first(root, 'vendorVersion')].filter((x) => x !== null).join(' ') || null,
    naming_contexts: contexts,
    failover,
    paging,
    referrals: [...directory.references, ...unpaged.searchReferences],
    people: people.length,
    groups: groups.length,
  };
}
