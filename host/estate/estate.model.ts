import type { DependencyRow, FoundDoc, OverrideRow } from './estate.repo.ts';
import { isCertain, type Link, type LinkInput, type OverrideEntry } from './estate.schema.ts';

/** A dependency of a service and where it came from. */
export interface Dependency {
  service: string;
  origin: 'override' | 'confirmed';
}

/** A service as `GET /v1/estate` and `GET /v1/estate/services/{name}` answer it. */
export interface ServiceView {
  name: string;
  owner: string | null;
  team: string | null;
  tier: number | null;
  approvers: string[];
  technologies: string[];
  health_url: string | null;
  links: Link[];
  depends_on: Dependency[];
  /** Per cause id: this service's settings of that cause (thresholds) over the pack's defaults. */
  check_settings: Record<string, Record<string, number | string | boolean>>;
  /** Which fields a person set (they win over discovery); the rest came from the last build. */
  overridden: string[];
  added_by: string;
  added_at: string;
}

/** A name found by a build that no person has added: it counts toward nothing until added. */
export interface CandidateView {
  name: string;
  owner: string | null;
  team: string | null;
  technologies: string[];
  links: Link[];
  sources: FoundDoc['sources'];
}

const key = (l: LinkInput): string => JSON.stringify([l.kind, l.match ?? null, l.connector ?? null, l.path ?? null, l.name ?? null]);

/** Links of discovery and of the override, one of each; the override's origin wins. */
function mergeLinks(found: Link[], given: LinkInput[] | undefined): Link[] {
  const out = new Map<string, Link>();
  for (const l of found) if (!out.has(key(l))) out.set(key(l), { ...l, certain: isCertain(l.origin) });
  for (const l of given ?? []) out.set(key(l), { ...l, origin: 'override', certain: true });
  return [...out.values()];
}

/** The services: each person-added entry over what the last build found for the name. */
export function assemble(
  overrides: OverrideRow[],
  found: Map<string, FoundDoc>,
  deps: DependencyRow[],
): { services: ServiceView[]; candidates: CandidateView[] } {
  const confirmed = new Map<string, DependencyRow[]>();
  for (const d of deps) confirmed.set(d.service, [...(confirmed.get(d.service) ?? []), d]);
  const services = overrides.map((o) => serviceOf(o, found.get(o.name), confirmed.get(o.name) ?? [])).sort((a, b) => a.name.localeCompare(b.name));
  const added = new Set(overrides.map((o) => o.name));
  const candidates = [...found]
    .filter(([name]) => !added.has(name))
    .map(([name, f]) => ({
      name,
      owner: f.owner,
      team: f.team,
      technologies: f.technologies,
      links: f.links.map((l) => ({ ...l, certain: isCertain(l.origin) })),
      sources: f.sources,
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return { services, candidates };
}

function serviceOf(o: OverrideRow, f: FoundDoc | undefined, confirmed: DependencyRow[]): ServiceView {
  const e: OverrideEntry = o.entry;
  const depends = new Map<string, Dependency>();
  for (const d of confirmed) depends.set(d.depends_on, { service: d.depends_on, origin: 'confirmed' });
  for (const d of e.depends_on ?? []) depends.set(d, { service: d, origin: 'override' });
  return {
    name: o.name,
    owner: e.owner ?? f?.owner ?? null,
    team: e.team ?? f?.team ?? null,
    tier: e.tier ?? null,
    approvers: e.approvers ?? [],
    technologies: e.technologies ?? f?.technologies ?? [],
    health_url: e.health_url ?? null,
    check_settings: e.check_settings ?? {},
    links: mergeLinks(f?.links ?? [], e.links),
    depends_on: [...depends.values()].sort((a, b) => a.service.localeCompare(b.service)),
    overridden: Object.keys(e).sort(),
    added_by: o.added_by,
    added_at: o.added_at,
  };
}
