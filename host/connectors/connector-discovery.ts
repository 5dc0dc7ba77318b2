import type { Logger } from '../log.ts';
import type { DiscoveredService } from '../plugins/contract.ts';
import { clip } from '../text.ts';
import { callable, callConnector, clipProblem, isObj, jsonOnly } from './connector-calls.ts';
import type { ConnectorStore } from './connectors.store.ts';
import { scrubJson, scrubText } from './secrets.ts';

/** What a discovered service name may look like. */
const SERVICE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const MAX_DISCOVERED = 5000;
const MAX_EVIDENCE_BYTES = 4 * 1024;

export interface DiscoveryReport {
  ok: boolean;
  problem: string | null;
  cut_off: boolean;
  services: DiscoveredService[];
  dropped: number;
  took_ms: number;
}

/**
 * The configured connectors whose kind can `discover`, by name, with the fault that stops one
 * being used (null when it can be asked).
 */
export async function discoverable(store: ConnectorStore): Promise<Array<{ name: string; kind: string; fault: string | null }>> {
  return (await store.all())
    .filter((r) => r.type !== null && typeof r.type.plugin.discover === 'function')
    .map((r) => ({ name: r.name, kind: r.kind, fault: r.fault ?? (r.settings === null ? 'its settings are incomplete' : null) }));
}

/**
 * Asks one configured connector what services it knows of, cut off at `timeoutMs` (the
 * discovery limit, not the 15 s of tests). Never throws for the plugin's sake: a throw, a bad
 * answer or the cut-off is the problem, scrubbed of the connector's secrets; names that are
 * not service names are dropped (counted in `dropped`).
 */
export async function discoverWith(d: { store: ConnectorStore; log: Logger }, name: string, timeoutMs: number): Promise<DiscoveryReport> {
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  const r = await d.store.resolve(name);
  const ready = callable(r, 'discovery', (t) => typeof t.plugin.discover === 'function', `connectors of kind ${r.kind} cannot discover`);
  if (!ready.ok) return { ok: false, problem: clipProblem(ready.failure.problem), cut_off: false, services: [], dropped: 0, took_ms: took() };
  const { c } = ready;
  const outcome = await callConnector({
    job: 'discovery',
    c,
    timeoutMs,
    log: d.log,
    call: (ctx) => (c.type.plugin.discover as (x: unknown) => unknown).call(c.type.plugin, ctx),
  });
  if (!outcome.ok)
    return {
      ok: false,
      problem: clipProblem(outcome.failure.problem),
      cut_off: outcome.failure.reason === 'cut_off',
      services: [],
      dropped: 0,
      took_ms: took(),
    };
  const v = outcome.value as { services?: unknown } | null;
  if (typeof v !== 'object' || v === null || !Array.isArray(v.services))
    return { ok: false, problem: 'the discovery answered something that is not {services: [...]}', cut_off: false, services: [], dropped: 0, took_ms: took() };
  const services: DiscoveredService[] = [];
  let dropped = 0;
  for (const item of v.services as unknown[]) {
    const e = item as { name?: unknown; source?: unknown; evidence?: unknown } | null;
    if (typeof e !== 'object' || e === null || typeof e.name !== 'string' || !SERVICE_NAME.test(e.name.trim()) || services.length >= MAX_DISCOVERED) {
      dropped++;
      continue;
    }
    let evidence = isObj(e.evidence) ? (scrubJson(jsonOnly(e.evidence), c.secrets) as Record<string, unknown>) : {};
    if (JSON.stringify(evidence).length > MAX_EVIDENCE_BYTES) evidence = { truncated: true };
    const source = typeof e.source === 'string' && e.source.trim() !== '' ? clip(scrubText(e.source.trim(), c.secrets), 64) : 'unknown';
    services.push({ name: e.name.trim(), source, evidence });
  }
  return { ok: true, problem: null, cut_off: false, services, dropped, took_ms: took() };
}
