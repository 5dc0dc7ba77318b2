import type { ConnectorContext } from '../../../host/plugins/contract.ts';
import { DEFAULT_TIMEOUT_S, type Settings } from './settings.ts';

/**
 * Alertmanager API v2 calls of the `silence` action (silence.ts): JSON through ctx.http (an expiry is its DELETE).
 */

/** An API answer: a 2xx with its JSON body, or what went wrong. */
export type Api = { ok: true; status: number; body: unknown } | { ok: false; problem: string };

/** The connector's settings, as the host validated them. */
export const settingsOf = (ctx: ConnectorContext) => ctx.settings as unknown as Settings;
/** The Alertmanager's address without a trailing slash. */
export const base = (s: Settings) => s.url.replace(/\/+$/, '');
/** The request's `auth` when the settings have a user. */
export const basicAuth = (s: Settings) => (s.username === undefined ? {} : { auth: { basic: { username: s.username, password: s.password ?? '' } } });

/** One API call through ctx.http; any 2xx is answered with its JSON body. */
export async function api(
  ctx: ConnectorContext,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  query: Array<[string, string]> = [],
  body?: unknown,
): Promise<Api> {
  const s = settingsOf(ctx);
  const r = await ctx.http.request({
    method,
    url: base(s) + path,
    query,
    headers: {
      accept: 'application/json',
      'user-agent': 'oncall-connector-alertmanager/1.1',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...basicAuth(s),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    timeoutS: s.timeout_s ?? DEFAULT_TIMEOUT_S,
  });
  if (!r.ok) return r;
  const problem = statusProblem(r.status, r.where, r.text, r.headers.location);
  if (problem !== null) return { ok: false, problem };
  try {
    return { ok: true, status: r.status, body: r.text.trim() === '' ? null : (JSON.parse(r.text) as unknown) };
  } catch {
    return { ok: false, problem: `HTTP ${r.status} from ${r.where} is not an Alertmanager API answer (not JSON); is url the Alertmanager?` };
  }
}

/** What a non-2xx answer means, in words; null for a 2xx. */
export function statusProblem(status: number, where: string, text: string, location: string | undefined): string | null {
  if (status >= 200 && status < 300) return null;
  if (status === 401) return `authentication failed (HTTP 401 from ${where}); check username and password`;
  if (status === 403) return `access refused (HTTP 403 from ${where})`;
  if (status >= 300 && status < 400) return `${where} redirects (HTTP ${status}) to ${location ?? 'nowhere'}; point url at the final address`;
  const said = text.trim().replace(/\s+/g, ' ').slice(0, 300) || 'no reason given';
  if (status === 400) return `Alertmanager refused the request (HTTP 400 from ${where}): ${said}`;
  return `HTTP ${status} from ${where}: ${said}`;
}

/** Expires a silence: `DELETE /api/v2/silence/{id}` (ctx.http: the timeout, the host's cut-off, basic auth, no redirect followed). */
export async function expire(ctx: ConnectorContext, id: string): Promise<{ ok: true } | { ok: false; problem: string }> {
  const r = await api(ctx, 'DELETE', `/api/v2/silence/${encodeURIComponent(id)}`);
  return r.ok ? { ok: true } : r;
}
