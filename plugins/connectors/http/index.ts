import type {
  ConnectorContext,
  ConnectorFindings,
  ConnectorPluginWithCapabilities,
  ConnectorQueryRequest,
  ConnectorQueryResult,
  ConnectorTestResult,
  PluginContext,
} from '../../../host/plugins/contract.ts';
import { actRunbook, rehearseRunbook } from './runbook.ts';
import { DEFAULT_TIMEOUT_S, type Settings } from './settings.ts';
import { join, shown } from './urls.ts';

/**
 * HTTP probes and runbooks. `test` GETs `base_url` + `health_path` and passes on a 2xx; `query`
 * GETs `base_url` + the path asked for: both only GET. The one action, `runbook` (runbook.ts),
 * POSTs (or PUTs) the episode to a runbook endpoint; only the host's action path calls it.
 * Everything goes through the host's client (ctx.http); redirects are reported, not followed,
 * so a token never travels to another address. See README.md.
 */

const MAX_BODY_BYTES = 256 * 1024;

function settingsOf(ctx: PluginContext): Settings {
  return ctx.settings as unknown as Settings;
}

type Got = { ok: true; status: number; headers: Record<string, string>; text: string; truncated: boolean; ms: number } | { ok: false; problem: string };

/** One GET through the host's client (ctx.http: timeout, bearer auth, no redirects, the body capped). */
async function get(ctx: ConnectorContext, url: string): Promise<Got> {
  const s = settingsOf(ctx);
  const r = await ctx.http.request({
    url,
    headers: { accept: 'application/json, text/plain;q=0.9, */*;q=0.5', 'user-agent': 'oncall-connector-http/1.0', ...(s.headers ?? {}) },
    ...(s.bearer_token === undefined ? {} : { auth: { bearer: s.bearer_token } }),
    timeoutS: s.timeout_s ?? DEFAULT_TIMEOUT_S,
    maxBodyBytes: MAX_BODY_BYTES,
  });
  if (!r.ok) return r;
  return { ok: true, status: r.status, headers: r.headers, text: r.text, truncated: r.truncated, ms: r.took_ms };
}

function statusProblem(r: { status: number; headers: Record<string, string> }, url: string): string | null {
  if (r.status >= 200 && r.status < 300) return null;
  if (r.status >= 300 && r.status < 400)
    return `${shown(url)} redirects (HTTP ${r.status}) to ${r.headers.location ?? 'nowhere'}; point base_url at the final address`;
  if (r.status === 401) return `authentication failed (HTTP 401 from ${shown(url)})`;
  if (r.status === 403) return `access refused (HTTP 403 from ${shown(url)})`;
  return `HTTP ${r.status} from ${shown(url)}`;
}

/** The body read (at most MAX_BODY_BYTES): parsed when JSON, else text. */
function bodyOf(r: { headers: Record<string, string>; text: string; truncated: boolean }): { body: unknown; truncated: boolean } {
  if (!r.truncated && /json/i.test(r.headers['content-type'] ?? '')) {
    try {
      return { body: JSON.parse(r.text) as unknown, truncated: false };
    } catch {
      /* not JSON after all: the text */
    }
  }
  return { body: r.text, truncated: r.truncated };
}

const plugin: ConnectorPluginWithCapabilities = {
  async test(ctx: ConnectorContext): Promise<ConnectorTestResult & ConnectorFindings> {
    const s = settingsOf(ctx);
    const url = join(s.base_url, s.health_path ?? '/');
    const r = await get(ctx, url);
    if (!r.ok) return { ok: false, problem: r.problem };
    const found = { url: shown(url), status: r.status, content_type: r.headers['content-type'] ?? null, server: r.headers.server ?? null, took_ms: r.ms };
    const problem = statusProblem(r, url);
    return { ok: problem === null, problem, found };
  },

  async query(ctx: ConnectorContext, request: ConnectorQueryRequest): Promise<ConnectorQueryResult> {
    const s = settingsOf(ctx);
    if (!request.query.startsWith('/')) return { ok: false, problem: 'the query is a path starting with /, such as /status', data: null };
    const url = new URL(join(s.base_url, request.query));
    for (const [k, v] of Object.entries(request.params ?? {})) url.searchParams.set(k, v);
    if (url.origin !== new URL(s.base_url).origin) return { ok: false, problem: 'the path leaves base_url', data: null };
    const r = await get(ctx, url.toString());
    if (!r.ok) return { ok: false, problem: r.problem, data: null };
    const { body, truncated } = bodyOf(r);
    const data = { status: r.status, content_type: r.headers['content-type'] ?? null, body, truncated };
    const problem = statusProblem(r, url.toString());
    return { ok: problem === null, problem, data };
  },

  /** `runbook` is the only action kind: see runbook.ts. Not reversible: there is no undo. */
  rehearse: (ctx, action) => rehearseRunbook(ctx, action),
  act: (ctx, action) => actRunbook(ctx, action),
};

export default plugin;
