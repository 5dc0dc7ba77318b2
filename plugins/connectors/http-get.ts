import type { ConnectorContext } from '../../host/plugins/contract.ts';

/**
 * The read-only GET the HTTP-API connectors share (not a plugin: a module their entries import).
 * Basic auth when a username is set, the connector's timeout and the host's cut-off signal, no
 * redirects followed, and every failure to get an answer said in words a person can act on.
 */
export interface HttpApiSettings {
  url: string;
  username?: string;
  password?: string;
  timeout_s?: number;
}

export type Reached = { ok: true; status: number; text: string; where: string } | { ok: false; problem: string };

export async function httpGet(ctx: ConnectorContext, path: string, params: Array<[string, string]>, userAgent: string, defaultTimeoutS: number): Promise<Reached> {
  const s = ctx.settings as unknown as HttpApiSettings;
  const timeoutS = s.timeout_s ?? defaultTimeoutS;
  const url = new URL(s.url.replace(/\/+$/, '') + path);
  for (const [k, v] of params) url.searchParams.append(k, v);
  const where = `${url.origin}${url.pathname}`;
  const headers: Record<string, string> = { accept: 'application/json', 'user-agent': userAgent };
  if (s.username !== undefined) headers.authorization = `Basic ${Buffer.from(`${s.username}:${s.password ?? ''}`, 'utf8').toString('base64')}`;
  const signals = [AbortSignal.timeout(timeoutS * 1000), ...(ctx.signal === undefined ? [] : [ctx.signal])];
  let res: Response;
  try {
    res = await fetch(url, { method: 'GET', headers, redirect: 'manual', signal: AbortSignal.any(signals) });
  } catch (e) {
    const err = e as { name?: string; cause?: { code?: string; message?: string } };
    if (err.name === 'TimeoutError' || err.name === 'AbortError') return { ok: false, problem: `no answer from ${where} within ${timeoutS} s` };
    if (err.cause?.code === 'ECONNREFUSED') return { ok: false, problem: `cannot connect to ${url.host}: connection refused` };
    if (err.cause?.code === 'ENOTFOUND' || err.cause?.code === 'EAI_AGAIN') return { ok: false, problem: `cannot resolve ${url.hostname}` };
    return { ok: false, problem: `cannot reach ${where}: ${err.cause?.code ?? err.cause?.message ?? (e instanceof Error ? e.message : String(e))}` };
  }
  if (res.status === 401) return { ok: false, problem: `authentication failed (HTTP 401 from ${where}); check username and password` };
  if (res.status === 403) return { ok: false, problem: `access refused (HTTP 403 from ${where})` };
  if (res.status >= 300 && res.status < 400) return { ok: false, problem: `${where} redirects (HTTP ${res.status}) to ${res.headers.get('location') ?? 'nowhere'}; point url at the final address` };
  return { ok: true, status: res.status, text: await res.text(), where };
}
