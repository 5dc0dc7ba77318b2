import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type {
  ChangeEvent,
  Commit,
  HttpReading,
  MetricSample,
  MetricSeries,
  Obstacle,
  ReadCapability,
  RelatedEpisode,
  ServiceEvent,
  CheckService,
  CheckSignal,
  HttpFailure,
} from '../plugins/contract.ts';
import type { Cause } from './catalogue.ts';
import { checkContext, type CheckInputs, type ReaderSource, type Readers } from './context.ts';
import { readFailure } from './read-failure.ts';
import { runCheck, unknownVerdict, type VerdictResult } from './run-check.ts';

/** A failed read as a scenario records it. */
interface RecordedFailure {
  obstacle: Obstacle;
  problem: string;
}

/**
 * One recorded case of a cause, kept beside the pack's code in `scenarios/<cause>.json`: what the
 * connectors answered, and the verdict the check must reach from it. See docs/packs.md.
 */
export interface Scenario {
  name: string;
  expect: {
    verdict: 'holds' | 'ruled_out' | 'unknown';
    obstacle?: Obstacle;
    /** Words the reason must contain (a refusal is not worded as a timeout). */
    reason?: string;
  };
  /** The moment checked (and the episode's opening unless `opened_at` is given). */
  at: string;
  opened_at?: string;
  signals?: Array<Partial<CheckSignal> & { name: string }>;
  service?: Partial<CheckService>;
  related?: Partial<{ dependencies: RelatedEpisode[]; history: RelatedEpisode[] }>;
  /** The estate's `check_settings` for the cause. */
  settings?: Record<string, number | string | boolean>;
  answers?: {
    /** The connector named as the source (default `prometheus`, `git`). */
    source?: string;
    /** Capabilities that cannot be read at all, as the host finds before running the check. */
    unavailable?: Partial<Record<ReadCapability, RecordedFailure>>;
    metrics?: Array<{ query?: string; range?: string; samples?: MetricSample[]; series?: MetricSeries[]; fail?: RecordedFailure }>;
    changes?: {
      commits?: Array<Omit<Commit, 'source' | 'path'> & Partial<Pick<Commit, 'source' | 'path'>>>;
      events?: ChangeEvent[];
      gaps?: Array<{ source: string } & RecordedFailure>;
    };
    http?: Array<{ url: string; status?: number; excerpt?: string; took_ms?: number; problem?: string; failure?: HttpFailure }>;
    ledger?: ServiceEvent[];
    /**
     * Answers of capabilities read with `ctx.read` (plugin API 1.5), such as `sql`: matched by
     * capability and the declaration's `name` (and `params`, when recorded); `shown` is the query
     * the evidence names (default `<capability> <pack>/<name>`).
     */
    reads?: Array<{ capability: string; name?: string; params?: unknown; answer?: unknown; shown?: string; fail?: RecordedFailure }>;
  };
}

/** The scenarios of a pack folder, by cause id (from `scenarios/*.json`, each `{cause, scenarios: [...]}`). */
export function loadScenarios(packDir: string): Map<string, Scenario[]> {
  const out = new Map<string, Scenario[]>();
  const dir = path.join(packDir, 'scenarios');
  if (!existsSync(dir)) return out;
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .sort()) {
    const doc = JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as { cause: string; scenarios: Scenario[] };
    out.set(doc.cause, [...(out.get(doc.cause) ?? []), ...doc.scenarios]);
  }
  return out;
}

/** The inputs a scenario describes, with defaults for what it leaves out. */
export function scenarioInputs(cause: Cause, s: Scenario): CheckInputs {
  const service: CheckService = {
    name: 'orders',
    owner: null,
    team: null,
    tier: null,
    technologies: [],
    health_url: null,
    links: [],
    depends_on: [],
    in_estate: true,
    ...s.service,
  };
  return {
    episode: { id: 'scenario', service: service.name, opened_at: s.opened_at ?? s.at },
    at: s.at,
    moment: s.opened_at === undefined || s.opened_at === s.at ? 'opening' : 'newest_signal',
    signals: (s.signals ?? []).map((x, i) => ({
      fingerprint: `fp${i}`,
      severity: 'critical',
      status: 'firing',
      labels: {},
      summary: '',
      joined_at: s.opened_at ?? s.at,
      starts_at: null,
      expression: null,
      ...x,
      baseline: { first_seen: s.at, last_seen: s.at, firings_7d: 0, firings_30d: 0, flapping: false, ...x.baseline },
    })),
    service,
    related: { dependencies: s.related?.dependencies ?? [], history: s.related?.history ?? [] },
    overrides: s.settings === undefined ? {} : { [cause.id]: s.settings },
  };
}

/** Readers that answer from the scenario's recordings only: a read it did not record fails. */
export function replaySource(s: Scenario): ReaderSource {
  const a = s.answers ?? {};
  const src = a.source ?? 'prometheus';
  const notRecorded = (what: string) => readFailure('the read was refused or failed', `the scenario recorded no answer for ${what}`);
  const failed = (f: RecordedFailure) => readFailure(f.obstacle, f.problem);
  const readers: Readers = {
    metrics: {
      query: async (promql, at) => {
        const r = a.metrics?.find((m) => m.query === promql);
        if (r === undefined) throw notRecorded(`the query ${promql}`);
        if (r.fail !== undefined) throw failed(r.fail);
        return { source: src, query: promql, at: at ?? s.at, samples: (r.samples ?? []).map((x) => ({ metric: x.metric, value: num(x.value) })) };
      },
      range: async (promql, opts) => {
        const r = a.metrics?.find((m) => m.range === promql);
        if (r === undefined) throw notRecorded(`the range query ${promql}`);
        if (r.fail !== undefined) throw failed(r.fail);
        return {
          source: src,
          query: promql,
          at: opts.end,
          series: (r.series ?? []).map((x) => ({ metric: x.metric, values: x.values.map(([t, v]) => [t, num(v)] as [number, number]) })),
        };
      },
    },
    changes: {
      since: async (since, until) => {
        const from = Date.parse(since);
        const to = Date.parse(until ?? s.at);
        const inWindow = (t: string) => Date.parse(t) >= from && Date.parse(t) <= to;
        const c = a.changes ?? {};
        return {
          commits: (c.commits ?? []).filter((x) => inWindow(x.at)).map((x) => ({ source: a.source ?? 'git', path: '.', ...x })),
          events: (c.events ?? []).filter((x) => inWindow(x.at)),
          gaps: (c.gaps ?? []).map((g) => ({ ...g })),
        };
      },
    },
    http: {
      get: async (url): Promise<HttpReading> => {
        const r = a.http?.find((h) => h.url === url);
        if (r === undefined) throw notRecorded(`GET ${url}`);
        const base = { source: 'health_url', query: `GET ${url}`, at: s.at, took_ms: r.took_ms ?? 5 };
        return r.problem !== undefined
          ? { ...base, answered: false, problem: r.problem, failure: r.failure ?? 'other' }
          : { ...base, answered: true, status: r.status ?? 200, excerpt: r.excerpt ?? '' };
      },
    },
    ledger: {
      events: async (f) => {
        const since = f.since === undefined ? -Infinity : Date.parse(f.since);
        const type = f.type;
        return (a.ledger ?? [])
          .filter((e) => (type === undefined ? true : type.endsWith('.') ? e.type.startsWith(type) : e.type === type) && Date.parse(e.at) >= since)
          .slice(0, f.limit ?? 100);
      },
    },
    read: async (capability, request, declared) => {
      const r = a.reads?.find(
        (x) =>
          x.capability === capability &&
          (x.name === undefined || x.name === request.name) &&
          (x.params === undefined || JSON.stringify(x.params) === JSON.stringify(request.params)),
      );
      const what = `${capability}${typeof request.name === 'string' ? ` ${request.name}` : ''}`;
      if (r === undefined) throw notRecorded(what);
      if (r.fail !== undefined) throw failed(r.fail);
      const shown = r.shown ?? `${capability}${declared === undefined ? '' : ` ${declared.pack}/${declared.name}`}`;
      return { source: a.source ?? capability, query: shown, at: s.at, answer: structuredClone(r.answer ?? null) };
    },
  };
  return {
    obstacle: (cap) => a.unavailable?.[cap] ?? null,
    readers: () => readers,
    secrets: () => [],
  };
}

/** Runs a cause on a scenario exactly as an investigation runs it, without a live peer. */
export async function replayScenario(cause: Cause, s: Scenario, log = silentPluginLog): Promise<VerdictResult> {
  const inputs = scenarioInputs(cause, s);
  const source = replaySource(s);
  for (const cap of cause.reads) {
    const o = source.obstacle(cap);
    if (o !== null) return unknownVerdict(cause, o.obstacle, o.problem);
  }
  return runCheck(cause, (signal, deadline) => checkContext(cause, inputs, source, log, signal, deadline), { timeoutMs: 5000, secrets: [], at: s.at });
}

/** JSON cannot hold NaN or infinities: recordings give them as Prometheus writes them ("NaN", "+Inf"). */
const num = (v: unknown): number => (v === 'NaN' ? NaN : v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v));

const silentPluginLog = { info: () => undefined, warn: () => undefined, error: () => undefined };
