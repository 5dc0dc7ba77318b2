import type { Client, Entry, SearchOptions } from 'ldapts';
import { buffer, dnKey, escapeFilter, first, guidText, ranged, sidText, values } from './ldap-entries.ts';
import { LDAP_LIMITS, type LdapSettings } from './sso-settings.ts';

/** A person as the directory describes them. */
export interface DirectoryPerson {
  dn: string;
  /** The address they are known by here (lower case), or null when the directory gives none. */
  email: string | null;
  name: string;
  /** The short sign-in name (sAMAccountName or uid), for `memberUid` groups. */
  uid: string | null;
  disabled: boolean;
}

/** A group: its DN, its name (and other names), and every ID it may be mapped by. */
export interface DirectoryGroup {
  dn: string;
  name: string;
  aliases: string[];
  ids: string[];
}

/** A group found for a person, and how deep (1: the person is a direct member). */
export interface GroupAt extends DirectoryGroup {
  depth: number;
}

/** A read that was cut short (a size limit, a referral not followed): nothing may be decided on it. */
export class PartialRead extends Error {}

const GROUP_ATTRS = ['cn', 'sAMAccountName', 'objectGUID', 'objectSid', 'entryUUID', 'gidNumber'];
const BINARY = ['objectGUID', 'objectSid'];
/** AD answers at most this many values of one attribute at a time (MaxValRange). */
const RANGE = 1500;

/** What a sign-in name becomes: the values to look it up by, and the key its limit counts under. */
export function signInName(raw: string, s: Pick<LdapSettings, 'domain' | 'netbios'>): { key: string; short: string; full: string | null } | null {
  const name = raw.trim();
  if (name === '' || name.length > 256) return null;
  const slash = /^([^\\@]+)\\([^\\@]+)$/.exec(name);
  if (slash !== null) {
    // The NetBIOS domain, else the first label of the DNS domain (BANK for bank.example); neither: no such form.
    const netbios = s.netbios ?? s.domain?.split('.')[0] ?? null;
    if (netbios === null || slash[1]!.toLowerCase() !== netbios.toLowerCase()) return null;
    const short = slash[2]!.toLowerCase();
    return { key: short, short, full: s.domain === null ? null : `${short}@${s.domain.toLowerCase()}` };
  }
  const at = /^([^@\\]+)@([^@\\]+)$/.exec(name);
  if (at !== null) {
    const full = name.toLowerCase();
    const same = s.domain !== null && at[2]!.toLowerCase() === s.domain.toLowerCase();
    return { key: same ? at[1]!.toLowerCase() : full, short: at[1]!.toLowerCase(), full };
  }
  if (name.includes('\\') || name.includes('@')) return null;
  const short = name.toLowerCase();
  return { key: short, short, full: s.domain === null ? null : `${short}@${s.domain.toLowerCase()}` };
}

/**
 * Reads of one directory over one connection (bound as the service account): people, their
 * groups (nested LDAP_LIMITS.nested_depth deep), group searches, and everything a sync needs.
 * Searches are paged when the settings say the server pages; a range of values that cannot be
 * read to the end makes the read partial (PartialRead), so that nothing is decided on half of it.
 * A size limit reached without paging fails the search (the server's error), for the same reason.
 */
export class Directory {
  readonly #client: Client;
  readonly #s: LdapSettings;
  /** Referrals the directory answered with, not followed. */
  readonly references = new Set<string>();

  constructor(client: Client, settings: LdapSettings) {
    this.#client = client;
    this.#s = settings;
  }

  async #search(base: string, filter: string, attributes: string[], opts: Partial<SearchOptions> = {}): Promise<Entry[]> {
    const { searchEntries, searchReferences } = await this.#client.search(base, {
      scope: 'sub',
      filter,
      attributes,
      explicitBufferAttributes: BINARY,
      ...(this.#s.page_size > 0 && opts.scope !== 'base' ? { paged: { pageSize: this.#s.page_size } } : {}),
      ...opts,
    });
    // Continuation references (AD's DNS and configuration partitions, another domain) are not
    // followed: the people and groups of the base's own partition are what is read. Discovery lists them.
    for (const r of searchReferences) this.references.add(r);
    return searchEntries;
  }

  #personAttrs(): string[] {
    const s = this.#s;
    return [...new Set([...s.login_attributes, s.email_attribute, s.name_attribute, 'cn', 'uid', 'sAMAccountName', 'userPrincipalName', 'memberOf'])];
  }

  #toPerson(e: Entry, disabled: boolean): DirectoryPerson {
    const s = this.#s;
    const uid = first(e, 'sAMAccountName') ?? first(e, 'uid');
    const mail = first(e, s.email_attribute) ?? first(e, 'userPrincipalName') ?? (uid !== null && s.domain !== null ? `${uid}@${s.domain}` : null);
    return {
      dn: e.dn,
      email: mail === null ? null : mail.trim().toLowerCase(),
      name: first(e, s.name_attribute) ?? first(e, 'cn') ?? uid ?? e.dn,
      uid,
      disabled,
    };
  }

  /** The one enabled person a sign-in name names, or null (none, several, or disabled). */
  async findPerson(short: string, full: string | null): Promise<DirectoryPerson | null> {
    const s = this.#s;
    const terms = s.login_attributes.flatMap((a) => {
      const lower = a.toLowerCase();
      const v = lower === 'userprincipalname' || lower === 'mail' ? full : short;
      return v === null ? [] : [`(${a}=${escapeFilter(v)})`];
    });
    if (full !== null && !s.login_attributes.some((a) => a.toLowerCase() === 'mail')) terms.push(`(mail=${escapeFilter(full)})`);
    if (terms.length === 0) return null;
    const filter = `(&${s.person_filter}(|${terms.join('')}))`;
    const found = await this.#search(s.base_dn, filter, this.#personAttrs(), { sizeLimit: 2, paged: false }).catch((err: unknown) => {
      // More than one entry matched (sizeLimitExceeded at two): the name is ambiguous.
      if ((err as { code?: number }).code === 4) return [];
      throw err;
    });
    if (found.length !== 1) return null;
    const person = this.#toPerson(found[0]!, false);
    return (await this.#isDisabled(person.dn)) ? { ...person, disabled: true } : person;
  }

  async #isDisabled(dn: string): Promise<boolean> {
    if (this.#s.disabled_filter === null) return false;
    const hit = await this.#search(dn, this.#s.disabled_filter, ['1.1'], { scope: 'base', paged: false }).catch((err: unknown) => {
      // The entry does not match (noSuchObject is not expected: it was just read).
      if ((err as { code?: number }).code === 32) return [];
      throw err;
    });
    return hit.length > 0;
  }

  #group(e: Entry): DirectoryGroup {
    const ids = [guidText(buffer(e, 'objectGUID')), sidText(buffer(e, 'objectSid')), first(e, 'entryUUID'), first(e, 'gidNumber')].filter(
      (x): x is string => x !== null,
    );
    const names = [first(e, 'sAMAccountName'), first(e, 'cn')].filter((x): x is string => x !== null);
    return { dn: e.dn, name: names[0] ?? e.dn, aliases: [...new Set(names.slice(1))], ids };
  }

  /** A person's groups, nested up to LDAP_LIMITS.nested_depth deep (deeper ones are left out). */
  async groupsOf(person: DirectoryPerson): Promise<GroupAt[]> {
    const s = this.#s;
    const found = new Map<string, GroupAt>();
    const direct = [`(member=${escapeFilter(person.dn)})`, `(uniqueMember=${escapeFilter(person.dn)})`];
    if (person.uid !== null) direct.push(`(memberUid=${escapeFilter(person.uid)})`);
    let frontier = await this.#search(s.base_dn, `(&${s.group_filter}(|${direct.join('')}))`, GROUP_ATTRS);
    if (s.membership === 'memberOf') {
      const entry = await this.#search(person.dn, '(objectClass=*)', ['memberOf'], { scope: 'base', paged: false });
      for (const dn of values(entry[0] ?? { dn: '' }, 'memberOf')) {
        if (frontier.some((g) => dnKey(g.dn) === dnKey(dn))) continue;
        const g = await this.#search(dn, s.group_filter, GROUP_ATTRS, { scope: 'base', paged: false }).catch(() => []);
        frontier.push(...g);
      }
    }
    for (let depth = 1; depth <= LDAP_LIMITS.nested_depth && frontier.length > 0; depth++) {
      const next: Entry[] = [];
      for (const e of frontier) {
        const key = dnKey(e.dn);
        if (found.has(key)) continue;
        found.set(key, { ...this.#group(e), depth });
        next.push(e);
      }
      if (depth === LDAP_LIMITS.nested_depth || next.length === 0) break;
      const parents: Entry[] = [];
      // The groups that hold this level's groups, a few DNs per search.
      for (let i = 0; i < next.length; i += 20) {
        const or = next
          .slice(i, i + 20)
          .flatMap((g) => [`(member=${escapeFilter(g.dn)})`, `(uniqueMember=${escapeFilter(g.dn)})`])
          .join('');
        parents.push(...(await this.#search(s.base_dn, `(&${s.group_filter}(|${or}))`, GROUP_ATTRS)));
      }
      frontier = parents;
    }
    return [...found.values()];
  }

  /** Groups whose name contains `q` (at most `limit`), for the settings' group search. */
  async searchGroups(q: string, limit = 50): Promise<DirectoryGroup[]> {
    const s = this.#s;
    const v = escapeFilter(q.trim());
    const filter = v === '' ? s.group_filter : `(&${s.group_filter}(|(cn=*${v}*)(sAMAccountName=*${v}*)))`;
    const found = await this.#search(s.base_dn, filter, GROUP_ATTRS, { sizeLimit: limit, paged: false }).catch((err: unknown) => {
      // A size limit reached here only means there are more: the first `limit` are enough.
      if ((err as { code?: number }).code === 4) return [];
      throw err;
    });
    return found
      .map((e) => this.#group(e))
      .sort((a, b) => a.name.localeCompare(b.name))
      .slice(0, limit);
  }

  /** Whether a mapping's group (a DN, a name or an ID) names a group of this directory. */
  async hasGroup(mapping: string): Promise<boolean> {
    const s = this.#s;
    const v = escapeFilter(mapping.trim());
    if (mapping.includes('=')) {
      const found = await this.#search(mapping.trim(), s.group_filter, ['1.1'], { scope: 'base', paged: false }).catch(() => []);
      return found.length > 0;
    }
    const byName = await this.#search(s.base_dn, `(&${s.group_filter}(|(cn=${v})(sAMAccountName=${v})))`, GROUP_ATTRS, { sizeLimit: 1, paged: false });
    if (byName.length > 0) return true;
    // An ID: read the groups' IDs (objectGUID and objectSid are binary, so not searchable as text).
    const all = await this.#search(s.base_dn, s.group_filter, GROUP_ATTRS);
    return all.some((e) => this.#group(e).ids.some((id) => id.toLowerCase() === mapping.trim().toLowerCase()));
  }

  /** Every person under the base, with whether each is disabled (paged). */
  async allPeople(): Promise<DirectoryPerson[]> {
    const s = this.#s;
    const disabled = new Set<string>();
    if (s.disabled_filter !== null) {
      for (const e of await this.#search(s.base_dn, `(&${s.person_filter}${s.disabled_filter})`, ['1.1'])) disabled.add(dnKey(e.dn));
    }
    return (await this.#search(s.base_dn, s.person_filter, this.#personAttrs())).map((e) => this.#toPerson(e, disabled.has(dnKey(e.dn))));
  }

  /**
   * Every group under the base with its members: member and uniqueMember DNs, read to the end
   * through ranged results (`member;range=…`) where the directory cuts them, and memberUid names.
   */
  async allGroups(): Promise<Array<DirectoryGroup & { members: string[]; memberUids: string[] }>> {
    const s = this.#s;
    const ad = s.kind === 'active_directory';
    const memberAttr = ad ? `member;range=0-${RANGE - 1}` : 'member';
    const entries = await this.#search(s.base_dn, s.group_filter, [...GROUP_ATTRS, memberAttr, 'uniqueMember', 'memberUid']);
    const out: Array<DirectoryGroup & { members: string[]; memberUids: string[] }> = [];
    for (const e of entries) {
      const members = await this.#readRanged(e, 'member');
      members.push(...values(e, 'uniqueMember'));
      out.push({ ...this.#group(e), members, memberUids: values(e, 'memberUid') });
    }
    return out;
  }

  /** All values of a ranged attribute, reading the next ranges of the entry until the directory says `*`. */
  async #readRanged(e: Entry, attr: string): Promise<string[]> {
    let { values: got, next } = ranged(e, attr);
    const all = [...got];
    while (next !== null) {
      const [more] = await this.#search(e.dn, '(objectClass=*)', [`${attr};range=${next}-${next + RANGE - 1}`], { scope: 'base', paged: false });
      if (more === undefined) throw new PartialRead(`the group ${e.dn} could not be read again for its ${attr} values from ${next}`);
      ({ values: got, next } = ranged(more, attr));
      if (got.length === 0 && next !== null) throw new PartialRead(`the directory gave no ${attr} values of ${e.dn} from ${next}`);
      all.push(...got);
    }
    return all;
  }
}
