import { createHmac } from 'node:crypto';
import type { ConnectorContext } from '../../host/plugins/contract.ts';

/**
 * The POST the notification targets share (not a plugin: a module their entries import): a JSON
 * body sent as exact bytes, the connector's timeout and the host's cut-off signal, no redirects
 * followed, and every failure said in words a person can act on, naming only the address's
 * origin (a webhook path often carries a token).
 */
export type Posted = { ok: true; status: number; text: string } | { ok: false; problem: string };

/** `sha256=<hex HMAC-SHA256 of body with secret>`: the X-Oncall-Signature header's value. */
export function signature(body: string | Buffer, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export async function postJson(ctx: ConnectorContext, url: string, body: string, headers: Record<string, string>, timeoutS: number): Promise<Posted> {
  const where = new URL(url).origin;
  const signals = [AbortSignal.timeout(timeoutS * 1000), ...(ctx.signal === undefined ? [] : [ctx.signal])];
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, redirect: 'manual', signal: AbortSignal.any(signals) });
  } catch (e) {
    return { ok: false, problem: reachProblem(e, url, timeoutS) };
  }
  const text = (await res.text().catch(() => '')).slice(0, 2000);
  if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status, text };
  if (res.status >= 300 && res.status < 400) return { ok: false, problem: `${where} redirects (HTTP ${res.status}); point url at the final address` };
  if (res.status === 401 || res.status === 403) return { ok: false, problem: `${where} refused the message (HTTP ${res.status}): check the secret or key` };
  return { ok: false, problem: `${where} answered HTTP ${res.status}` };
}

/** Whether the address answers at all (any HTTP status): the read-only reachability check of `test`. */
export async function reachable(ctx: ConnectorContext, url: string, timeoutS: number): Promise<{ ok: true; status: number } | { ok: false; problem: string }> {
  const signals = [AbortSignal.timeout(timeoutS * 1000), ...(ctx.signal === undefined ? [] : [ctx.signal])];
  try {
    const res = await fetch(url, { method: 'HEAD', redirect: 'manual', signal: AbortSignal.any(signals) });
    await res.body?.cancel();
    if (res.status >= 500) return { ok: false, problem: `${new URL(url).origin} answered HTTP ${res.status}` };
    return { ok: true, status: res.status };
  } catch (e) {
    return { ok: false, problem: reachProblem(e, url, timeoutS) };
  }
}

function reachProblem(e: unknown, url: string, timeoutS: number): string {
  const u = new URL(url);
  const err = e as { name?: string; cause?: { code?: string; message?: string } };
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return `no answer from ${u.origin} within ${timeoutS} s`;
  const code = err.cause?.code;
  if (code === 'ECONNREFUSED') return `cannot connect to ${u.host}: connection refused`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `cannot resolve ${u.hostname}`;
  if (typeof code === 'string' && /CERT|SSL|TLS/.test(code)) return `TLS failed with ${u.host}: ${code}`;
  return `cannot reach ${u.origin}: ${code ?? 'network error'}`;
}
