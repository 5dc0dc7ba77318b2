import type { Message, Outcome } from './smtp.ts';

/** Each call to the mail API gives up after this long. */
export const API_TIMEOUT_MS = 15_000;

export interface ApiDomain {
  name: string;
  status: string;
}

export type DomainsResult = { ok: true; domains: ApiDomain[] } | { ok: false; reason: string };

/**
 * A client of the Resend HTTP API (or anything that speaks it) at `baseUrl`: `GET /domains`
 * lists the account's domains with their status, `POST /emails` sends. Never throws; failures
 * say `refused: ...` (the API answered no) or `unreachable: ...` (it could not be asked).
 */
export class ResendClient {
  readonly #baseUrl: string;

  constructor(baseUrl: string) {
    this.#baseUrl = baseUrl.replace(/\/+$/, '');
  }

  async domains(key: string): Promise<DomainsResult> {
    const res = await this.#call('GET', '/domains', key);
    if (!res.ok) return res;
    const data = (res.body as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) return { ok: false, reason: 'refused: the mail API answered GET /domains without a list of domains' };
    const domains = data
      .filter((d): d is { name: string; status?: unknown } => typeof d === 'object' && d !== null && typeof (d as { name?: unknown }).name === 'string')
      .map((d) => ({ name: d.name, status: typeof d.status === 'string' ? d.status : 'unknown' }));
    return { ok: true, domains };
  }

  async send(key: string, message: Message): Promise<Outcome> {
    const res = await this.#call('POST', '/emails', key, { from: message.from, to: [message.to], subject: message.subject, text: message.text });
    return res.ok ? { ok: true } : res;
  }

  async #call(method: string, path: string, key: string, body?: unknown): Promise<{ ok: true; body: unknown } | { ok: false; reason: string }> {
    let res: Response;
    try {
      res = await fetch(this.#baseUrl + path, {
        method,
        headers: { authorization: `Bearer ${key}`, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(API_TIMEOUT_MS),
        redirect: 'error',
      });
    } catch (e) {
      const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
      if (err.name === 'TimeoutError')
        return { ok: false, reason: `unreachable: the mail API did not answer ${method} ${path} within ${API_TIMEOUT_MS / 1000} s` };
      const why = err.cause?.code ?? err.cause?.message ?? err.message ?? 'network error';
      return { ok: false, reason: `unreachable: the mail API could not be reached (${why})` };
    }
    let parsed: unknown = null;
    try {
      const text = await res.text();
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      parsed = null;
    }
    if (res.ok) return { ok: true, body: parsed };
    const said = (parsed as { message?: unknown } | null)?.message;
    const detail = typeof said === 'string' ? `: ${said}` : '';
    if (res.status === 401 || res.status === 403) return { ok: false, reason: `refused: the mail API refused the API key (HTTP ${res.status})${detail}` };
    if (res.status >= 500) return { ok: false, reason: `unreachable: the mail API failed (HTTP ${res.status})${detail}` };
    return { ok: false, reason: `refused: the mail API answered HTTP ${res.status} to ${method} ${path}${detail}` };
  }
}

/** True when `address`'s domain is a verified domain or a subdomain of one. */
export function senderVerified(address: string, domains: ApiDomain[]): boolean {
  const at = address.lastIndexOf('@');
  if (at < 0) return false;
  const domain = address
    .slice(at + 1)
    .toLowerCase()
    .replace(/\.$/, '');
  return domains.some((d) => {
    if (d.status !== 'verified') return false;
    const name = d.name.toLowerCase().replace(/\.$/, '');
    return domain === name || domain.endsWith(`.${name}`);
  });
}
