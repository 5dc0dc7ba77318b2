import { dnKey } from './ldap-entries.ts';
import type { DirectoryGroup, DirectoryPerson } from './directory.ts';
import { grant, names, type Granted } from './group-mapping.ts';
import { LDAP_LIMITS, type GroupMapping } from './sso-settings.ts';

export type GroupWithMembers = DirectoryGroup & { members: string[]; memberUids: string[] };

/**
 * Who the mapped groups hold, read top-down from each mapped group: its members, the members of
 * the groups in it, and so on, LDAP_LIMITS.nested_depth deep (a direct member is at depth 1; a
 * person reached only deeper is left out). `memberUid` names people by their short name. Answers
 * each person reached (by DN key) with what their mapped groups give.
 */
export function mappedMembers(
  people: readonly DirectoryPerson[],
  groups: readonly GroupWithMembers[],
  mappings: readonly GroupMapping[],
): Map<string, { person: DirectoryPerson; granted: Granted }> {
  const peopleByDn = new Map(people.map((p) => [dnKey(p.dn), p]));
  const peopleByUid = new Map(people.filter((p) => p.uid !== null).map((p) => [p.uid!.toLowerCase(), p]));
  const groupsByDn = new Map(groups.map((g) => [dnKey(g.dn), g]));
  const reached = new Map<string, DirectoryGroup[]>();
  for (const root of groups) {
    if (!mappings.some((m) => names(m.group, root))) continue;
    const seen = new Set<string>([dnKey(root.dn)]);
    let level: GroupWithMembers[] = [root];
    for (let depth = 1; depth <= LDAP_LIMITS.nested_depth && level.length > 0; depth++) {
      const next: GroupWithMembers[] = [];
      for (const g of level) {
        const found = [...g.members.map((m) => peopleByDn.get(dnKey(m))), ...g.memberUids.map((u) => peopleByUid.get(u.toLowerCase()))];
        for (const p of found) {
          if (p === undefined) continue;
          const key = dnKey(p.dn);
          const list = reached.get(key) ?? [];
          if (!list.includes(root)) list.push(root);
          reached.set(key, list);
        }
        for (const m of g.members) {
          const sub = groupsByDn.get(dnKey(m));
          if (sub !== undefined && !seen.has(dnKey(sub.dn))) {
            seen.add(dnKey(sub.dn));
            next.push(sub);
          }
        }
      }
      level = next;
    }
  }
  const out = new Map<string, { person: DirectoryPerson; granted: Granted }>();
  for (const [key, roots] of reached) {
    const granted = grant(roots, mappings);
    if (granted !== null) out.set(key, { person: peopleByDn.get(key)!, granted });
  }
  return out;
}
