import type { ReadableConnector, ReadMethod, ReadReport } from '../connectors/connector-reads.ts';
import { recordedBy } from '../ledger/caller-events.ts';
import type { LedgerEvent } from '../ledger/entry.ts';
import type { LedgerFilter } from '../ledger/ledger.model.ts';
import type {
  ChangeEvent,
  Changes,
  CheckService,
  Commit,
  HttpReading,
  MetricSample,
  MetricSeries,
  Obstacle,
  ReadCapability,
  CapabilityReading,
  ServiceEvent,
} from '../plugins/contract.ts';
import { pluginHttp } from '../plugins/http-client.ts';
import { clip } from '../text.ts';
import { HOST_READS } from '../plugins/capabilities.ts';
import type { ReaderSource, Readers } from './context.ts';
import { readFailure } from './read-failure.ts';

/** What live readers need of the connectors area. */
export interface ConnectorReads {
  readable(capability: ReadCapability): Promise<ReadableConnector[]>;
  read(name: string, method: ReadMethod, request: Record<string, unknown>, maxMs: number): Promise<ReadReport>;
  secretsOf(name: string): Promise<string[]>;
  /** The same reads with each connector looked up once for one source's life, where the reads offer it (the connectors area does). */
  session?(): ConnectorReads;
}

/** What live readers need of the ledger. */
export interface LedgerFinder {
  find(filter: LedgerFilter): Promise<{ events: LedgerEvent[]; more: boolean }>;
}

type Choice = { ok: true; name: string } | { ok: false; obstacle: Obstacle; problem: string };

const HTTP_MAX_BYTES = 64 * 1024;
const LEDGER_SCAN = 1000;

/**
 * Chooses the connector that serves a capability for a service: one the estate links to the
 * service (a link naming it), else the only one configured. Several configured and none linked
 * is the study's "several connections could answer"; none, "nothing connected can read it".
 */
export function chooseConnector(capability: ReadCapability, service: CheckService, readable: ReadableConnector[]): Choice {
  const linked = service.links.map((l) => l.connector).filter((n): n is string => n !== undefined);
  const byName = new Map(readable.map((r) => [r.name, r]));
  const mine = [...new Set(linked)].map((n) => byName.get(n)).filter((r): r is ReadableConnector => r !== undefined);
  const usable = (rs: ReadableConnector[]) => rs.filter((r) => r.fault === null);
  if (mine.length > 0) {
    const ok = usable(mine);
    if (ok.length > 0) return { ok: true, name: ok[0]!.name };
    return { ok: false, obstacle: 'the read was refused or failed', problem: `connector ${mine[0]!.name} cannot be used: ${mine[0]!.fault}` };
  }
  const all = usable(readable);
  if (all.length === 1) return { ok: true, name: all[0]!.name };
  if (all.length > 1)
    return {
      ok: false,
      obstacle: 'several connections could answer',
      problem: `${all.length} connectors read ${capability} (${all
        .slice(0, 5)
        .map((r) => r.name)
        .join(', ')}) and the estate links none of them to ${service.name}: name one in a workload link of the service`,
    };
  if (readable.length > 0)
    return { ok: false, obstacle: 'the read was refused or failed', problem: `connector ${readable[0]!.name} cannot be used: ${readable[0]!.fault}` };
  return {
    ok: false,
    obstacle: 'nothing connected can read it',
    problem: `no connector reads ${capability}: add one (${capability === 'metrics' ? 'prometheus' : capability === 'changes' ? 'git' : `a kind that declares ${capability}`})`,
  };
}

/**
 * Chooses the connector of a capability a connector declares (plugin API 1.5, `sql` and a
 * vendor's own): only one the estate links to the service. Unlike `metrics`, never the only one
 * configured: a database or a ticket queue is one service's, and reading another's would prove a
 * cause on the wrong system.
 */
export function chooseLinked(capability: ReadCapability, service: CheckService, readable: ReadableConnector[]): Choice {
  const linked = new Set(service.links.map((l) => l.connector).filter((n): n is string => n !== undefined));
  const mine = readable.filter((r) => linked.has(r.name));
  if (mine.length === 0 && readable.length > 0)
    return {
      ok: false,
      obstacle: 'nothing connected can read it',
      problem: `the estate links no connector that reads ${capability} to ${service.name} (${readable
        .slice(0, 5)
        .map((r) => r.name)
        .join(', ')} read${readable.length === 1 ? 's' : ''} it): name one in a link of the service`,
    };
  return chooseConnector(capability, service, mine);
}

/**
 * The readers of checks on one service, bound to the connectors the estate links to it (chosen
 * once per investigation), to the ledger and to the host's HTTP client. Every read is cut off at
 * the check's deadline; a read that cannot be made throws a ReadFailure with its obstacle.
 */
export async function liveSource(
  d: { connectors: ConnectorReads; ledger: LedgerFinder },
  service: CheckService,
  at: string,
  capabilities: readonly ReadCapability[] = [],
): Promise<ReaderSource> {
  d = { ...d, connectors: d.connectors.session?.() ?? d.connectors };
  const secrets: string[] = [];
  const metrics = chooseConnector('metrics', service, await d.connectors.readable('metrics'));
  // Every other capability the causes read that the host does not serve itself: a connector declares it (plugin API 1.5).
  const others = new Map<string, Choice>();
  for (const cap of new Set(capabilities))
    if (!(cap in HOST_READS) && cap !== 'metrics' && cap !== 'changes') others.set(cap, chooseLinked(cap, service, await d.connectors.readable(cap)));
  for (const c of others.values()) if (c.ok) secrets.push(...(await d.connectors.secretsOf(c.name)));
  const changeConnectors = await d.connectors.readable('changes');
  const repoLinks = service.links.filter((l) => l.kind === 'repository');
  secrets.push(...(metrics.ok ? await d.connectors.secretsOf(metrics.name) : []));
  for (const l of repoLinks) if (l.connector !== undefined) secrets.push(...(await d.connectors.secretsOf(l.connector)));

  const readers = (signal: AbortSignal, deadline: () => number): Readers => {
    const left = () => Math.max(1, deadline() - Date.now());
    const metricsRead = async (method: 'query' | 'range', request: Record<string, unknown>): Promise<{ source: string; data: Record<string, unknown> }> => {
      if (!metrics.ok) throw readFailure(metrics.obstacle, metrics.problem);
      const r = await d.connectors.read(metrics.name, method, request, left());
      if (signal.aborted) throw readFailure('the read was refused or failed', 'the check was cut off');
      if (!r.ok) throw readFailure('the read was refused or failed', `${metrics.name}: ${r.problem}`);
      const data = r.value.data;
      if (typeof data !== 'object' || data === null) throw readFailure('the read was refused or failed', `${metrics.name} answered no data`);
      return { source: metrics.name, data: data as Record<string, unknown> };
    };
    return {
      metrics: {
        query: async (promql, when) => {
          const t = when ?? at;
          const { source, data } = await metricsRead('query', { query: promql, at: t });
          return { source, query: promql, at: t, samples: samplesOf(data, source) };
        },
        range: async (promql, o) => {
          const { source, data } = await metricsRead('range', { query: promql, start: o.start, end: o.end, step_s: o.step_s });
          return { source, query: promql, at: o.end, series: seriesOf(data, source) };
        },
      },
      changes: {
        since: async (since, until = at): Promise<Changes> => {
          const commits: Commit[] = [];
          const gaps: Changes['gaps'] = [];
          if (repoLinks.length === 0)
            gaps.push({ source: 'estate', obstacle: 'nothing connected can read it', problem: `the estate links no repository to ${service.name}` });
          for (const l of repoLinks) {
            const choice = l.connector !== undefined ? { ok: true as const, name: l.connector } : chooseConnector('changes', service, changeConnectors);
            if (!choice.ok) {
              gaps.push({ source: 'estate', obstacle: choice.obstacle, problem: choice.problem });
              continue;
            }
            const r = await d.connectors.read(choice.name, 'changes', { since, until, ...(l.path === undefined ? {} : { path: l.path }) }, left());
            if (!r.ok) {
              gaps.push({ source: choice.name, obstacle: 'the read was refused or failed', problem: r.problem });
              continue;
            }
            for (const c of commitsOf(r.value.commits)) commits.push({ ...c, source: choice.name, path: l.path ?? '.' });
          }
          const events = (await serviceEvents(d.ledger, service.name, 'human.', since, 500))
            .filter((e) => (e.type === 'human.deploy' || e.type === 'human.action') && Date.parse(e.at) <= Date.parse(until))
            .map(({ trace: _trace, ...e }): ChangeEvent => e);
          commits.sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
          return { commits, events, gaps };
        },
      },
      http: {
        get: async (url, o = {}): Promise<HttpReading> => {
          const timeoutS = Math.min(15, Math.max(0.1, o.timeout_s ?? 5), left() / 1000);
          const client = pluginHttp({ settings: {}, signal, secrets: [] });
          let answer = await client.request({ url, timeoutS, maxBodyBytes: HTTP_MAX_BYTES });
          // A pooled connection the server closed (it just restarted) fails at once: one more try
          // on a fresh connection, so a restart is not taken for an endpoint that is down.
          if (!answer.ok && answer.failure === 'reset' && !signal.aborted) answer = await client.request({ url, timeoutS, maxBodyBytes: HTTP_MAX_BYTES });
          const base = { source: 'health_url', query: `GET ${url}`, at: new Date().toISOString() };
          if (!answer.ok)
            return {
              ...base,
              answered: false,
              took_ms: answer.took_ms ?? Math.round(timeoutS * 1000),
              problem: answer.problem,
              failure: answer.failure ?? 'other',
            };
          return { ...base, answered: true, status: answer.status, took_ms: answer.took_ms, excerpt: clip(answer.text, 500, '…') };
        },
      },
      ledger: {
        events: async (f) => serviceEvents(d.ledger, service.name, f.type, f.since, Math.min(1000, Math.max(1, f.limit ?? 100))),
      },
      read: async (capability, request, declared): Promise<CapabilityReading> => {
        const choice = others.get(capability);
        if (choice === undefined)
          throw readFailure('the read was refused or failed', `${capability} is not read with ctx.read: use its own reader (ctx.${capability})`);
        if (!choice.ok) throw readFailure(choice.obstacle, choice.problem);
        const r = await d.connectors.read(choice.name, 'read', { capability, request, ...(declared === undefined ? {} : { declared }) }, left());
        if (signal.aborted) throw readFailure('the read was refused or failed', 'the check was cut off');
        if (!r.ok) throw readFailure('the read was refused or failed', `${choice.name}: ${r.problem}`);
        const named = declared === undefined ? '' : ` ${declared.pack}/${declared.name}`;
        const shown = typeof r.value.shown === 'string' ? r.value.shown : `${capability}${named}`;
        return { source: choice.name, query: clip(shown, 4000, '…'), at: new Date().toISOString(), answer: r.value.answer ?? null };
      },
    };
  };
  return {
    obstacle: (cap) => {
      if (cap === 'metrics') return metrics.ok ? null : { obstacle: metrics.obstacle, problem: metrics.problem };
      const c = others.get(cap);
      return c === undefined || c.ok ? null : { obstacle: c.obstacle, problem: c.problem };
    },
    readers: (signal, deadline) => readers(signal, () => deadline),
    secrets: () => secrets,
  };
}

/** Events of the ledger naming the service in `data.service`, newest first. */
export async function serviceEvents(
  ledger: LedgerFinder,
  service: string,
  type: string | undefined,
  since: string | undefined,
  limit: number,
): Promise<ServiceEvent[]> {
  const sinceMs = since === undefined ? -Infinity : Date.parse(since);
  const prefix = type === undefined ? undefined : type.endsWith('.') ? type : undefined;
  const { events } = await ledger.find({ ...(type === undefined ? {} : { type: prefix ?? type }), limit: LEDGER_SCAN, order: 'desc' });
  const out: ServiceEvent[] = [];
  for (const e of events) {
    if (Date.parse(e.at) < sinceMs) break;
    if (prefix === undefined && type !== undefined && e.type !== type) continue;
    if (e.data.service !== service) continue;
    out.push({
      seq: e.seq,
      type: e.type,
      at: e.at,
      actor: e.actor,
      reason: e.reason ?? null,
      trace: e.trace ?? null,
      data: e.data,
      recorded_by: recordedBy(e),
    });
    if (out.length >= limit) break;
  }
  return out;
}

const num = (v: unknown): number => (v === 'NaN' ? NaN : v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v));

function samplesOf(data: Record<string, unknown>, source: string): MetricSample[] {
  const result = data.result;
  if (data.resultType === 'scalar' && Array.isArray(result)) return [{ metric: {}, value: num(result[1]) }];
  if (data.resultType !== 'vector' || !Array.isArray(result))
    throw readFailure('the read was refused or failed', `${source} answered a ${String(data.resultType)}, not an instant vector`);
  return (result as Array<{ metric?: Record<string, string>; value?: [number, string] }>).map((s) => ({ metric: s.metric ?? {}, value: num(s.value?.[1]) }));
}

function seriesOf(data: Record<string, unknown>, source: string): MetricSeries[] {
  if (data.resultType !== 'matrix' || !Array.isArray(data.result))
    throw readFailure('the read was refused or failed', `${source} answered a ${String(data.resultType)}, not a matrix`);
  return (data.result as Array<{ metric?: Record<string, string>; values?: Array<[number, string]> }>).map((s) => ({
    metric: s.metric ?? {},
    values: (s.values ?? []).map(([t, v]) => [Number(t), num(v)] as [number, number]),
  }));
}

function commitsOf(v: unknown): Array<Omit<Commit, 'source' | 'path'>> {
  if (!Array.isArray(v)) return [];
  return v
    .filter((c): c is Record<string, unknown> => typeof c === 'object' && c !== null)
    .filter((c) => typeof c.sha === 'string' && typeof c.at === 'string')
    .slice(0, 500)
    .map((c) => ({
      sha: String(c.sha).slice(0, 64),
      at: String(c.at),
      author: clip(typeof c.author === 'string' ? c.author : '', 200, '…'),
      subject: clip(typeof c.subject === 'string' ? c.subject : '', 500, '…'),
    }));
}
