import type { Role } from '../identity/principal.ts';
import { dnKey } from './ldap-entries.ts';
import type { GroupMapping } from './sso-settings.ts';

/** What a person's groups give them: the highest role, every team and every tag; null: no mapped group. */
export interface Granted {
  role: Role;
  teams: string[];
  tags: string[];
  /** The mappings' groups that matched, as written in the settings. */
  groups: string[];
}

export const RANK: Record<Role, number> = { viewer: 1, admin: 2, owner: 3 };

/** A group as it may be named in a mapping: its DN, its name and its IDs (or a provider's claim value). */
export interface NamedGroup {
  dn?: string;
  name: string;
  /** Other names it goes by (AD: its cn beside its sAMAccountName). */
  aliases?: string[];
  ids?: string[];
}

/** Whether a mapping's `group` names this group: by DN (case and spacing aside), name or ID (case aside). */
export function names(mapping: string, g: NamedGroup): boolean {
  const m = mapping.trim();
  if (m.includes('=') && g.dn !== undefined && dnKey(m) === dnKey(g.dn)) return true;
  const lower = m.toLowerCase();
  if (g.name.toLowerCase() === lower || (g.aliases ?? []).some((a) => a.toLowerCase() === lower)) return true;
  if (m.includes('=') && g.name.includes('=') && dnKey(m) === dnKey(g.name)) return true;
  return (g.ids ?? []).some((id) => id.toLowerCase() === lower);
}

/** The role, teams and tags `groups` give under `mappings`; null when no mapping names any of them. */
export function grant(groups: readonly NamedGroup[], mappings: readonly GroupMapping[]): Granted | null {
  const hits = mappings.filter((m) => groups.some((g) => names(m.group, g)));
  if (hits.length === 0) return null;
  const role = hits.map((m) => m.role).reduce((a, b) => (RANK[b] > RANK[a] ? b : a));
  const uniq = (xs: string[]) => [...new Set(xs)].sort();
  return { role, teams: uniq(hits.flatMap((m) => m.teams)), tags: uniq(hits.flatMap((m) => m.tags)), groups: hits.map((m) => m.group) };
}
