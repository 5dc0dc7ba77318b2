import type {
  ConnectorContext,
  ConnectorFindings,
  ConnectorPluginWithCapabilities,
  ConnectorQueryRequest,
  ConnectorQueryResult,
  ConnectorRangeRequest,
  ConnectorTestResult,
  DiscoveredService,
  DiscoveryResult,
} from '../../../host/plugins/contract.ts';

/**
 * Prometheus over its HTTP API (read-only: GET only). `test` reads /api/v1/status/buildinfo and
 * reports the version; `query` runs an instant PromQL query (/api/v1/query), `range` a range
 * query (/api/v1/query_range); it serves the checks' `metrics` capability. See README.md.
 */

interface Settings {
  url: string;
  username?: string;
  password?: string;
  timeout_s?: number;
}

const DEFAULT_TIMEOUT_S = 10;

type Answer = { ok: true; status: number; body: Record<string, unknown> } | { ok: false; problem: string };

/** GETs an API path (ctx.http: timeout, basic auth, no redirects) and reads Prometheus's envelope `{status, data | errorType, error}`. */
async function api(ctx: ConnectorContext, path: string, params: Record<string, string> = {}): Promise<Answer> {
  const s = ctx.settings as unknown as Settings;
  const reached = await ctx.http.request({
    url: s.url.replace(/\/+$/, '') + path,
    query: Object.entries(params),
    headers: { accept: 'application/json', 'user-agent': 'oncall-connector-prometheus/1.0' },
    ...(s.username === undefined ? {} : { auth: { basic: { username: s.username, password: s.password ?? '' } } }),
    timeoutS: s.timeout_s ?? DEFAULT_TIMEOUT_S,
  });
  if (!reached.ok) return reached;
  const { status, text, where } = reached;
  if (status === 401) return { ok: false, problem: `authentication failed (HTTP 401 from ${where}); check username and password` };
  if (status === 403) return { ok: false, problem: `access refused (HTTP 403 from ${where})` };
  if (status >= 300 && status < 400)
    return { ok: false, problem: `${where} redirects (HTTP ${status}) to ${reached.headers.location ?? 'nowhere'}; point url at the final address` };
  const res = { status };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, problem: `HTTP ${res.status} from ${where} is not a Prometheus API answer (not JSON); is url the Prometheus server?` };
  }
  if (typeof body !== 'object' || body === null || typeof (body as { status?: unknown }).status !== 'string') {
    return { ok: false, problem: `HTTP ${res.status} from ${where} is not a Prometheus API answer` };
  }
  const b = body as Record<string, unknown>;
  if (b.status !== 'success')
    return { ok: false, problem: `Prometheus answered HTTP ${res.status}: ${String(b.errorType ?? 'error')}: ${String(b.error ?? 'no reason given')}` };
  return { ok: true, status: res.status, body: b };
}

const plugin: ConnectorPluginWithCapabilities = {
  async test(ctx: ConnectorContext): Promise<ConnectorTestResult & ConnectorFindings> {
    const r = await api(ctx, '/api/v1/status/buildinfo');
    if (!r.ok) return { ok: false, problem: r.problem };
    const data = (r.body.data ?? {}) as Record<string, unknown>;
    const text = (k: string) => (typeof data[k] === 'string' ? (data[k] as string) : null);
    if (text('version') === null) return { ok: false, problem: 'the build info names no version; is url a Prometheus server?' };
    return { ok: true, problem: null, found: { version: text('version'), revision: text('revision'), go_version: text('goVersion'), branch: text('branch') } };
  },

  async query(ctx: ConnectorContext, request: ConnectorQueryRequest): Promise<ConnectorQueryResult> {
    const s = ctx.settings as unknown as Settings;
    const params: Record<string, string> = { query: request.query, timeout: `${s.timeout_s ?? DEFAULT_TIMEOUT_S}s` };
    if (request.at !== undefined) params.time = request.at;
    const r = await api(ctx, '/api/v1/query', params);
    if (!r.ok) return { ok: false, problem: r.problem, data: null };
    return { ok: true, problem: null, data: r.body.data ?? null };
  },

  /**
   * A range query (/api/v1/query_range): `data` is the API's `data` object, a `matrix`. A step
   * that is not a positive number of seconds, or a start or end that is not a time, is a problem
   * without asking; Prometheus's own refusals (more than 11,000 points per series, bad PromQL)
   * come back as problems in its words.
   */
  async range(ctx: ConnectorContext, request: ConnectorRangeRequest): Promise<ConnectorQueryResult> {
    const s = ctx.settings as unknown as Settings;
    if (typeof request.step_s !== 'number' || !Number.isFinite(request.step_s) || request.step_s <= 0)
      return { ok: false, problem: 'step_s must be a positive number of seconds', data: null };
    for (const k of ['start', 'end'] as const)
      if (typeof request[k] !== 'string' || Number.isNaN(Date.parse(request[k])))
        return { ok: false, problem: `${k} must be a time (RFC 3339, such as 2026-01-01T00:00:00Z)`, data: null };
    const params: Record<string, string> = {
      query: request.query,
      start: request.start,
      end: request.end,
      step: String(request.step_s),
      timeout: `${s.timeout_s ?? DEFAULT_TIMEOUT_S}s`,
    };
    const r = await api(ctx, '/api/v1/query_range', params);
    if (!r.ok) return { ok: false, problem: r.problem, data: null };
    return { ok: true, problem: null, data: r.body.data ?? null };
  },

  /**
   * Proposes services from the scrape targets: the values of the `service` label of `up`
   * (targets relabelled with a service name), then the `job` label of `up`, each with how many
   * targets carry it. Read-only instant queries, as `query` runs.
   */
  async discover(ctx: ConnectorContext): Promise<DiscoveryResult> {
    const s = ctx.settings as unknown as Settings;
    const services: DiscoveredService[] = [];
    for (const label of ['service', 'job']) {
      const promql = `count by (${label}) (up{${label}!=""})`;
      const r = await api(ctx, '/api/v1/query', { query: promql, timeout: `${s.timeout_s ?? DEFAULT_TIMEOUT_S}s` });
      if (!r.ok) throw new Error(r.problem);
      const result = ((r.body.data ?? {}) as { result?: unknown }).result;
      if (!Array.isArray(result)) continue;
      for (const sample of result as Array<{ metric?: Record<string, string>; value?: [number, string] }>) {
        const name = sample.metric?.[label];
        if (typeof name === 'string' && name !== '')
          services.push({ name, source: 'label', evidence: { label, query: promql, targets: Number(sample.value?.[1] ?? 0) } });
      }
    }
    return { services };
  },
};

export default plugin;
