import type { HostReadCapability, PackPlugin, ReadDeclaration } from './contract.ts';
import type { PluginRegistry } from './loader.ts';

/** A capability's name, as a manifest's `reads` and a cause's `reads` give it. */
export const CAPABILITY_NAME = /^[a-z][a-z0-9-]{0,39}$/;

/** The capabilities the host serves itself, declared as a connector declares its own (plugin API 1.5). */
export const HOST_READS: Readonly<Record<HostReadCapability, ReadDeclaration>> = {
  http: {
    description: 'A GET of a URL (the service health URL) with the host HTTP client: ctx.http.get.',
    request: { type: 'object', required: ['url'], properties: { url: { type: 'string' }, timeout_s: { type: 'number' } } },
    answer: { type: 'object' },
  },
  ledger: {
    description: "The service's own events in the ledger: ctx.ledger.events.",
    request: { type: 'object', properties: { type: { type: 'string' }, since: { type: 'string' }, limit: { type: 'integer' } } },
    answer: { type: 'array' },
  },
  episodes: {
    description: 'The related episodes the host gathered (ctx.related): no read is made.',
    request: { type: 'object' },
    answer: { type: 'object' },
  },
};

/** Who offers a capability: `host`, or the connector kinds whose manifest declares it. */
export interface OfferedCapability {
  name: string;
  by: string[];
}

/**
 * The read capabilities the loaded plugins offer: the host's own, and every connector's
 * manifest `reads` (plus, for connectors written before plugin API 1.5, the `reads` array of
 * their default export). Sorted by name.
 */
export function offeredCapabilities(registry: Pick<PluginRegistry, 'loaded'>): OfferedCapability[] {
  const by = new Map<string, string[]>(Object.keys(HOST_READS).map((k) => [k, ['host']]));
  for (const p of registry.loaded) {
    if (p.kind !== 'connector') continue;
    const legacy = (p.plugin as { reads?: unknown }).reads;
    const names = new Set([...Object.keys(p.manifest.reads ?? {}), ...(Array.isArray(legacy) ? legacy.filter((x): x is string => typeof x === 'string') : [])]);
    for (const n of names) by.set(n, [...(by.get(n) ?? []), p.name]);
  }
  return [...by].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, kinds]) => ({ name, by: kinds.sort() }));
}

/**
 * The loaded packs whose causes read a capability nothing loaded offers become broken, so a
 * misspelt capability shows at start (GET /v1/packs, a system event) and not as a quiet
 * `unknown` on every episode. Run on the whole registry (the host's: connectors and packs
 * together); answers a new registry.
 */
export function withDeclaredReads(registry: PluginRegistry): PluginRegistry {
  const offered = offeredCapabilities(registry).map((c) => c.name);
  const broken = [...registry.broken];
  const loaded = registry.loaded.filter((p) => {
    if (p.kind !== 'pack') return true;
    for (const c of (p.plugin as PackPlugin).causes)
      for (const r of c.reads)
        if (!offered.includes(r)) {
          broken.push({
            dir: p.dir,
            name: p.name,
            version: p.version,
            problem: `plugin "${p.name}" ${p.version} in ${p.dir}: cause ${c.id}: reads names "${String(r).slice(0, 40)}"; capabilities are ${offered.join(', ')}`,
          });
          return false;
        }
    return true;
  });
  return { ...registry, loaded, broken };
}
