// Runs a pack's cause as an investigation does (the host's live readers, the check runner and the
// check context) against a real Prometheus, through the prometheus connector plugin with the
// host's HTTP client: the live tests of the Prometheus-based packs (test/pack-*.test.ts).
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../../host/log.ts';
import { CauseCatalogue, type Cause } from '../../host/investigation/catalogue.ts';
import { checkContext, type CheckInputs } from '../../host/investigation/context.ts';
import { liveSource, type ConnectorReads } from '../../host/investigation/live-readers.ts';
import { runCheck, type VerdictResult } from '../../host/investigation/run-check.ts';
import type {
  CheckLink,
  CheckService,
  CheckSignal,
  ConnectorContext,
  ConnectorPluginWithCapabilities,
  ConnectorQueryResult,
} from '../../host/plugins/contract.ts';
import { pluginHttp } from '../../host/plugins/http-client.ts';
import { loadPlugins } from '../../host/plugins/loader.ts';
import { waitFor } from './wait.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const registry = await loadPlugins({ dirs: [path.join(REPO, 'packs')], log: silentLogger() });
export const catalogue = new CauseCatalogue(registry);
const connector = (await import('../../plugins/connectors/prometheus/index.ts')).default as ConnectorPluginWithCapabilities;
const pluginLog = { info: () => undefined, warn: () => undefined, error: () => undefined };
/** Set to a file to append every answer Prometheus gave (JSON lines): how the packs' scenarios were recorded. */
const RECORD = process.env.PACK_PROMETHEUS_RECORD;

/** The host's connector reads, answered by the prometheus connector plugin itself with the host's HTTP client. */
function pluginReads(base: string): ConnectorReads {
  const settings = { url: base, timeout_s: 5 };
  return {
    readable: async (capability) => (capability === 'metrics' ? [{ name: 'prometheus', kind: 'prometheus', fault: null }] : []),
    secretsOf: async () => [],
    read: async (_name, method, request, maxMs) => {
      const signal = AbortSignal.timeout(maxMs);
      const ctx: ConnectorContext = { log: pluginLog, settings, signal, timeoutMs: maxMs, http: pluginHttp({ settings, signal, secrets: [] }) };
      let r: ConnectorQueryResult;
      if (method === 'query') r = await connector.query!(ctx, request as { query: string; at?: string });
      else if (method === 'range') r = await connector.range!(ctx, request as { query: string; start: string; end: string; step_s: number });
      else return { ok: false, problem: `the prometheus connector cannot answer ${method}` };
      if (RECORD !== undefined) appendFileSync(RECORD, JSON.stringify({ method, request, answer: r }) + '\n');
      return r.ok ? { ok: true, value: { ...r } } : { ok: false, problem: r.problem ?? 'no reason' };
    },
  };
}

export const workload = (match: string, name?: string): CheckLink => ({ kind: 'workload', match, certain: true, ...(name === undefined ? {} : { name }) });

export function service(name: string, links: CheckLink[] = [], technologies: string[] = []): CheckService {
  return { name, owner: null, team: null, tier: null, technologies, health_url: null, links, depends_on: [], in_estate: true };
}

/** Runs one cause now, as an investigation would, against the Prometheus at `base`. */
export async function liveCheck(
  base: string,
  id: string,
  svc: CheckService,
  opts: { settings?: Record<string, number | string | boolean>; openedAt?: string; signals?: CheckSignal[] } = {},
): Promise<VerdictResult> {
  const cause: Cause | null = catalogue.get(id);
  if (cause === null) throw new Error(`cause ${id} is not loaded`);
  const at = new Date().toISOString();
  const inputs: CheckInputs = {
    episode: { id: 'live', service: svc.name, opened_at: opts.openedAt ?? at },
    at,
    moment: 'opening',
    signals: opts.signals ?? [],
    service: svc,
    related: { dependencies: [], history: [] },
    overrides: opts.settings === undefined ? {} : { [id]: opts.settings },
  };
  const source = await liveSource({ connectors: pluginReads(base), ledger: { find: async () => ({ events: [], more: false }) } }, svc, at);
  return runCheck(cause, (signal, deadline) => checkContext(cause, inputs, source, pluginLog, signal, deadline), { timeoutMs: 10_000, secrets: [], at });
}

/** An instant query's samples, as a person pasting it into Prometheus at `at` (default now) sees them. */
export async function promQuery(base: string, query: string, at?: string): Promise<Array<{ metric: Record<string, string>; value: number }>> {
  const time = at === undefined ? '' : `&time=${encodeURIComponent(at)}`;
  const r = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(query)}${time}`);
  const body = (await r.json()) as { data?: { result?: Array<{ metric: Record<string, string>; value: [number, string] }> } };
  return (body.data?.result ?? []).map((x) => ({ metric: x.metric, value: Number(x.value[1]) }));
}

/**
 * Waits (60 s at most) until Prometheus answers `query` with samples `ok` accepts: a wait on
 * Prometheus's own wall-clock scrape schedule, polled, never a fixed sleep.
 */
export async function untilProm(
  base: string,
  what: string,
  query: string,
  ok: (samples: Array<{ metric: Record<string, string>; value: number }>) => boolean | Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  await waitFor(what, async () => ok(await promQuery(base, query)), timeoutMs, 250);
}
