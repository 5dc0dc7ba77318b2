import type { ConnectorContext, ConnectorFindings, ConnectorPluginWithCapabilities, ConnectorQueryRequest, ConnectorQueryResult, ConnectorTestResult, PluginContext } from '../../../host/plugins/contract.ts';

/**
 * Read-only HTTP probes. `test` GETs `base_url` + `health_path` and passes on a 2xx; `query`
 * GETs `base_url` + the path asked for. Only GET is ever sent; redirects are reported, not
 * followed, so a token never travels to another address. See README.md.
 */

interface Settings {
  base_url: string;
  health_path?: string;
  headers?: Record<string, string>;
  bearer_token?: string;
  timeout_s?: number;
}

const DEFAULT_TIMEOUT_S = 10;
const MAX_BODY_BYTES = 256 * 1024;

function settingsOf(ctx: PluginContext): Settings {
  return ctx.settings as unknown as Settings;
}

/** base_url joined with a path: exactly one slash between them. */
function join(base: string, path: string): string {
  return base.replace(/\/+$/, '') + (path.startsWith('/') ? path : `/${path}`);
}

/** What a person is shown of an address: no query string (it may carry a key). */
function shown(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}

async function get(ctx: ConnectorContext, url: string): Promise<{ ok: true; res: Response; ms: number } | { ok: false; problem: string }> {
  const s = settingsOf(ctx);
  const timeoutS = s.timeout_s ?? DEFAULT_TIMEOUT_S;
  const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.5', 'user-agent': 'oncall-connector-http/1.0', ...(s.headers ?? {}) };
  if (s.bearer_token !== undefined) headers.authorization = `Bearer ${s.bearer_token}`;
  const signals = [AbortSignal.timeout(timeoutS * 1000), ...(ctx.signal === undefined ? [] : [ctx.signal])];
  const started = performance.now();
  try {
    const res = await fetch(url, { method: 'GET', headers, redirect: 'manual', signal: AbortSignal.any(signals) });
    return { ok: true, res, ms: Math.round(performance.now() - started) };
  } catch (e) {
    return { ok: false, problem: fetchProblem(e, url, timeoutS) };
  }
}

/** A failed fetch in words: timeout, refused, unknown host, TLS. */
function fetchProblem(e: unknown, url: string, timeoutS: number): string {
  const err = e as { name?: string; cause?: { code?: string; message?: string } };
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return `no answer from ${shown(url)} within ${timeoutS} s`;
  const code = err.cause?.code;
  if (code === 'ECONNREFUSED') return `cannot connect to ${new URL(url).host}: connection refused`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `cannot resolve ${new URL(url).hostname}`;
  if (typeof code === 'string' && /CERT|SSL|TLS/.test(code)) return `TLS failed with ${new URL(url).host}: ${code}`;
  return `cannot reach ${shown(url)}: ${code ?? err.cause?.message ?? (e instanceof Error ? e.message : String(e))}`;
}

function statusProblem(res: Response, url: string): string | null {
  if (res.status >= 200 && res.status < 300) return null;
  if (res.status >= 300 && res.status < 400) return `${shown(url)} redirects (HTTP ${res.status}) to ${res.headers.get('location') ?? 'nowhere'}; point base_url at the final address`;
  if (res.status === 401) return `authentication failed (HTTP 401 from ${shown(url)})`;
  if (res.status === 403) return `access refused (HTTP 403 from ${shown(url)})`;
  return `HTTP ${res.status} from ${shown(url)}`;
}

/** The body, at most MAX_BODY_BYTES of it: parsed when JSON, else text. */
async function bodyOf(res: Response): Promise<{ body: unknown; truncated: boolean }> {
  const buf = Buffer.from(await res.arrayBuffer());
  const truncated = buf.length > MAX_BODY_BYTES;
  const text = buf.subarray(0, MAX_BODY_BYTES).toString('utf8');
  if (!truncated && /json/i.test(res.headers.get('content-type') ?? '')) {
    try {
      return { body: JSON.parse(text) as unknown, truncated };
    } catch {
      /* not JSON after all: the text */
    }
  }
  return { body: text, truncated };
}

const plugin: ConnectorPluginWithCapabilities = {
  async test(ctx: ConnectorContext): Promise<ConnectorTestResult & ConnectorFindings> {
    const s = settingsOf(ctx);
    const url = join(s.base_url, s.health_path ?? '/');
    const r = await get(ctx, url);
    if (!r.ok) return { ok: false, problem: r.problem };
    await r.res.body?.cancel();
    const found = { url: shown(url), status: r.res.status, content_type: r.res.headers.get('content-type'), server: r.res.headers.get('server'), took_ms: r.ms };
    const problem = statusProblem(r.res, url);
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
    const { body, truncated } = await bodyOf(r.res);
    const data = { status: r.res.status, content_type: r.res.headers.get('content-type'), body, truncated };
    const problem = statusProblem(r.res, url.toString());
    return { ok: problem === null, problem, data };
  },
};

export default plugin;
