// Running a Prometheus-based pack's causes against a real Prometheus, as an investigation does
// (the host's live readers, the check runner and the check context), through the prometheus
// connector plugin with the host's HTTP client. Shared by the packs' live tests
// (test/packs/pack-prometheus.test.ts, test/packs/pack-host.test.ts, test/packs/pack-blackbox.test.ts,
// test/packs/pack-web.test.ts, test/packs/pack-redis.test.ts, test/packs/pack-rabbitmq.test.ts).
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import { CauseCatalogue, type Cause } from '../../host/investigation/catalogue.ts';
import { checkContext, type CheckInputs } from '../../host/investigation/context.ts';
import { liveSource, type ConnectorReads } from '../../host/investigation/live-readers.ts';
import { runCheck, unknownVerdict, type VerdictResult } from '../../host/investigation/run-check.ts';
import { settingsValidator } from '../../host/connectors/settings-schema.ts';
import { silentLogger } from '../../host/log.ts';
import type {
  CheckLink,
  CheckService,
  CheckSignal,
  ConnectorContext,
  ConnectorPluginWithCapabilities,
  ConnectorQueryResult,
  ConnectorReadRequest,
} from '../../host/plugins/contract.ts';
import { pluginHttp } from '../../host/plugins/http-client.ts';
import { pluginLibrary } from '../../host/plugins/lib/index.ts';
import { loadPlugins } from '../../host/plugins/loader.ts';
import { waitFor } from './wait.ts';
import type { Exporter } from './exporter.ts';
import { startPrometheus, type ScrapeJob } from './prometheus.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const registry = await loadPlugins({ dirs: [path.join(REPO, 'packs')], log: silentLogger() });
const catalogue = new CauseCatalogue(registry);
const connector = (await import('../../plugins/connectors/prometheus/index.ts')).default as ConnectorPluginWithCapabilities;
/** The sql connectors (plugin API 1.5 `reads`), with their manifests' answer schemas, as the host checks them. */
const sqlKinds = {
  postgres: (await import('../../plugins/connectors/postgres/index.ts')).default as ConnectorPluginWithCapabilities,
  mysql: (await import('../../plugins/connectors/mysql/index.ts')).default as ConnectorPluginWithCapabilities,
};
const answerCheck = (kind: string) =>
  settingsValidator(
    (JSON.parse(readFileSync(path.join(REPO, 'plugins', 'connectors', kind, 'plugin.json'), 'utf8')) as { reads: { sql: { answer: Record<string, unknown> } } })
      .reads.sql.answer,
    'answer',
  );

/** The sql connector a live check reads through: its kind and settings. */
export interface SqlConnection {
  kind: 'postgres' | 'mysql';
  settings: Record<string, unknown>;
}
const pluginLog = { info: () => undefined, warn: () => undefined, error: () => undefined };
/** Set to a file to append every answer Prometheus gave (JSON lines): how the packs' scenarios were recorded. */
const RECORD = process.env.PACK_PROMETHEUS_RECORD;

/** The host's connector reads, answered by the prometheus connector plugin itself with the host's HTTP client. */
function pluginReads(base: string, sql?: SqlConnection): ConnectorReads {
  const settings = { url: base, timeout_s: 5 };
  return {
    readable: async (capability) =>
      capability === 'metrics'
        ? [{ name: 'prometheus', kind: 'prometheus', fault: null }]
        : capability === 'sql' && sql !== undefined
          ? [{ name: sql.kind, kind: sql.kind, fault: null }]
          : [],
    secretsOf: async () => (sql !== undefined && typeof sql.settings.password === 'string' ? [sql.settings.password] : []),
    read: async (_name, method, request, maxMs) => {
      const signal = AbortSignal.timeout(maxMs);
      if (method === 'read' && sql !== undefined) {
        const ctx: ConnectorContext = {
          log: pluginLog,
          settings: sql.settings,
          signal,
          timeoutMs: maxMs,
          http: pluginHttp({ settings: sql.settings, signal, secrets: [] }),
          lib: pluginLibrary,
        };
        const a = await sqlKinds[sql.kind].read!(ctx, request as unknown as ConnectorReadRequest);
        if (RECORD !== undefined) appendFileSync(RECORD, JSON.stringify({ method, request, answer: a }) + '\n');
        if (!a.ok) return { ok: false, problem: a.problem ?? 'no reason' };
        const bad = answerCheck(sql.kind)(a.answer);
        return bad === null ? { ok: true, value: { ...a } } : { ok: false, problem: bad };
      }
      const ctx: ConnectorContext = {
        log: pluginLog,
        settings,
        signal,
        timeoutMs: maxMs,
        http: pluginHttp({ settings, signal, secrets: [] }),
        lib: pluginLibrary,
      };
      let r: ConnectorQueryResult;
      if (method === 'query') r = await connector.query!(ctx, request as { query: string; at?: string });
      else if (method === 'range') r = await connector.range!(ctx, request as { query: string; start: string; end: string; step_s: number });
      else return { ok: false, problem: `the prometheus connector cannot answer ${method}` };
      if (RECORD !== undefined) appendFileSync(RECORD, JSON.stringify({ method, request, answer: r }) + '\n');
      return r.ok ? { ok: true, value: { ...r } } : { ok: false, problem: r.problem ?? 'no reason' };
    },
  };
}

/** A workload link of the estate; `name` marks its role for a pack (`backend`: the servers behind a proxy, packs/web). */
export const workload = (match: string, name?: string): CheckLink => ({ kind: 'workload', match, certain: true, ...(name === undefined ? {} : { name }) });

export function service(name: string, links: CheckLink[] = [], more: Partial<CheckService> = {}): CheckService {
  return { name, owner: null, team: null, tier: null, technologies: [], health_url: null, links, depends_on: [], in_estate: true, ...more };
}

/** Runs one cause now, as an investigation would, against the Prometheus at `base`. */
export async function check(
  base: string,
  id: string,
  svc: CheckService,
  opts: { settings?: Record<string, number | string | boolean>; openedAt?: string; signals?: CheckSignal[]; sql?: SqlConnection } = {},
): Promise<VerdictResult> {
  const cause: Cause | null = catalogue.get(id);
  if (cause === null) throw new Error(`cause ${id} is not loaded`);
  const at = new Date().toISOString();
  // An sql connector is read only when the estate links it to the service (live-readers.ts chooseLinked).
  if (opts.sql !== undefined) svc = { ...svc, links: [...svc.links, { kind: 'database', name: svc.name, connector: opts.sql.kind, certain: true }] };
  const inputs: CheckInputs = {
    episode: { id: 'live', service: svc.name, opened_at: opts.openedAt ?? at },
    at,
    moment: 'opening',
    signals: opts.signals ?? [],
    service: svc,
    related: { dependencies: [], history: [] },
    overrides: opts.settings === undefined ? {} : { [id]: opts.settings },
  };
  const source = await liveSource(
    { connectors: pluginReads(base, opts.sql), ledger: { find: async () => ({ events: [], more: false }) } },
    svc,
    at,
    cause.reads,
  );
  for (const cap of cause.reads) {
    const o = source.obstacle(cap);
    if (o !== null) return unknownVerdict(cause, o.obstacle, o.problem);
  }
  return runCheck(cause, (signal, deadline) => checkContext(cause, inputs, source, pluginLog, signal, deadline), { timeoutMs: 10_000, secrets: [], at });
}

/** Prometheus with the exporters as scrape jobs, once every job has been scraped twice. */
export async function scraping(t: ExecutionContext, jobs: Array<{ job: string; exporters: Exporter[]; labels?: Record<string, string> }>) {
  const prom = await startPrometheus(t, { jobs: jobs.map((j): ScrapeJob => ({ job: j.job, targets: j.exporters.map((e) => e.target), labels: j.labels })) });
  for (const j of jobs) await scrapedAgain(prom.base, j.job, j.exporters, 2);
  return prom;
}

/**
 * Waits until every exporter has been scraped `n` more times and Prometheus holds the last of
 * those scrapes (`timestamp(up)` of the job is that recent): a wait on Prometheus's own
 * wall-clock schedule (1 s), polled, never a fixed sleep.
 */
export async function scrapedAgain(base: string, job: string, exporters: Exporter[], n: number): Promise<void> {
  const from = exporters.map((e) => e.scrapes.length);
  const times = await waitFor(
    `${n} more scrapes of ${job}`,
    async () => (exporters.every((e, i) => e.scrapes.length >= from[i]! + n) ? exporters.map((e, i) => e.scrapes[from[i]! + n - 1]!) : null),
    20_000,
    50,
  );
  const oldest = Math.min(...times);
  await waitFor(
    `Prometheus to store the scrapes of ${job}`,
    async () => {
      const r = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(`min(timestamp(up{job="${job}"}))`)}`);
      const body = (await r.json()) as { data?: { result?: Array<{ value: [number, string] }> } };
      const ts = Number(body.data?.result?.[0]?.value[1] ?? 0);
      return ts * 1000 >= oldest - 500;
    },
    20_000,
    50,
  );
}

/** Re-runs an evidence item's query in Prometheus at the item's moment: what a person pasting it would see. */
export async function rerun(base: string, query: string, at: string): Promise<Array<{ metric: Record<string, string>; value: number }>> {
  const r = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(query)}&time=${encodeURIComponent(at)}`);
  const body = (await r.json()) as { data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
  return body.data.result.map((x) => ({ metric: x.metric, value: Number(x.value[1]) }));
}

/**
 * Waits (30 s at most, polled every 200 ms) until the instant query `promql` answers a vector for
 * which `ok` is true: a wait on Prometheus's own scrapes of an outside exporter (node_exporter,
 * the blackbox exporter) that offers nothing to await.
 */
export async function untilPrometheus(
  base: string,
  promql: string,
  ok: (samples: Array<{ metric: Record<string, string>; value: number }>) => boolean | Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  await waitFor(`Prometheus to answer ${promql} as wanted`, async () => ok(await rerun(base, promql, new Date().toISOString())), timeoutMs, 200);
}
