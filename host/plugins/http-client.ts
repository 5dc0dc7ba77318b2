import { scrubText } from '../scrub.ts';
import type { HttpAnswer, HttpFailure, HttpRequest, PluginHttp } from './contract.ts';

/** The timeout of a request whose connector has no `timeout_s` and that names none. */
export const DEFAULT_HTTP_TIMEOUT_S = 10;
/** The most of a response body read when the request names no limit. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/**
 * The host side of `ctx.http` (host/plugins/contract.ts, {@link PluginHttp}) for one plugin call:
 * `settings` give the default timeout (`timeout_s`), `signal` is the call's cut-off, and
 * `secrets` (the connector's secret settings) are blanked out of every problem it words.
 */
export function pluginHttp(opts: { settings: Readonly<Record<string, unknown>>; signal?: AbortSignal; secrets: string[] }): PluginHttp {
  const t = opts.settings.timeout_s;
  const settingTimeoutS = typeof t === 'number' && Number.isFinite(t) && t > 0 ? t : null;
  return {
    request: async (req) => {
      const answer = await send(req, req.timeoutS ?? settingTimeoutS ?? DEFAULT_HTTP_TIMEOUT_S, opts.signal);
      return answer.ok ? answer : { ...answer, problem: scrubText(answer.problem, opts.secrets) };
    },
  };
}

async function send(req: HttpRequest, timeoutS: number, cutOff: AbortSignal | undefined): Promise<HttpAnswer> {
  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    return { ok: false, problem: 'the address is not a valid URL', failure: 'invalid', took_ms: 0 };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return { ok: false, problem: `the address must be http or https, not ${url.protocol.replace(/:$/, '')}`, failure: 'invalid', took_ms: 0 };
  for (const [k, v] of req.query ?? []) url.searchParams.append(k, v);
  const where = req.shown === 'origin' ? url.origin : `${url.origin}${url.pathname}`;
  const headers = new Headers(req.headers ?? {});
  // Uncompressed unless the plugin asks otherwise: the answers are small and local, and
  // inflating them on the service's one event loop cost more than intake's own parsing while 200
  // investigations ran (docs/performance.md).
  if (!headers.has('accept-encoding')) headers.set('accept-encoding', 'identity');
  if (req.auth !== undefined) {
    headers.set(
      'authorization',
      'bearer' in req.auth
        ? `Bearer ${req.auth.bearer}`
        : `Basic ${Buffer.from(`${req.auth.basic.username}:${req.auth.basic.password ?? ''}`, 'utf8').toString('base64')}`,
    );
  }
  const signals = [AbortSignal.timeout(timeoutS * 1000), ...(cutOff === undefined ? [] : [cutOff])];
  const method = req.method ?? 'GET';
  const started = performance.now();
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body: req.body, redirect: 'manual', signal: AbortSignal.any(signals) });
  } catch (e) {
    return { ok: false, ...reachProblem(e, url, where, timeoutS), took_ms: Math.round(performance.now() - started) };
  }
  const max = req.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  let body: { text: string; truncated: boolean };
  try {
    body = method === 'HEAD' ? (await res.body?.cancel(), { text: '', truncated: false }) : await readCapped(res, max);
  } catch (e) {
    return { ok: false, ...reachProblem(e, url, where, timeoutS), took_ms: Math.round(performance.now() - started) };
  }
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => (out[k.toLowerCase()] = v));
  return { ok: true, status: res.status, headers: out, text: body.text, truncated: body.truncated, where, took_ms: Math.round(performance.now() - started) };
}

/** At most `max` bytes of the body as UTF-8; the rest is not read. */
async function readCapped(res: Response, max: number): Promise<{ text: string; truncated: boolean }> {
  if (res.body === null) return { text: '', truncated: false };
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(Buffer.from(value));
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      break;
    }
  }
  const buf = Buffer.concat(chunks);
  return { text: buf.subarray(0, max).toString('utf8'), truncated: buf.length > max };
}

/** A request that got no HTTP answer, in words and as a kind: timeout, refused, unknown host, TLS, reset, else the code. */
function reachProblem(e: unknown, url: URL, where: string, timeoutS: number): { problem: string; failure: HttpFailure } {
  const err = e as { name?: string; cause?: { code?: string; message?: string } };
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return { problem: `no answer from ${where} within ${timeoutS} s`, failure: 'timeout' };
  const code = err.cause?.code;
  if (code === 'ECONNREFUSED') return { problem: `cannot connect to ${url.host}: connection refused`, failure: 'refused' };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { problem: `cannot resolve ${url.hostname}`, failure: 'unresolved' };
  if (typeof code === 'string' && /CERT|SSL|TLS/.test(code)) return { problem: `TLS failed with ${url.host}: ${code}`, failure: 'tls' };
  const detail = code ?? err.cause?.message ?? (e instanceof Error ? e.message : String(e));
  const reset = code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || /other side closed/.test(detail);
  return { problem: `cannot reach ${where}: ${detail}`, failure: reset ? 'reset' : 'other' };
}
