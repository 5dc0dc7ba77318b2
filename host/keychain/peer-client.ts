import { AppError } from '../errors.ts';

/** How long another install has to answer (real time: a socket read, not a rule). */
export const PEER_TIMEOUT_MS = 15_000;
/** The largest answer read from another install (bundles of a large estate included). */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export interface PeerAnswer {
  status: number;
  body: unknown;
}

/**
 * An install's address: http(s), no credentials, query or fragment, without a trailing slash.
 * Throws 400 `invalid_body` naming `field`.
 */
export function checkAddress(raw: string, field: string): string {
  const url = raw.trim().replace(/\/+$/, '');
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new AppError('invalid_body', `${field} must be an http(s) address`);
  }
  if (!/^https?:$/.test(u.protocol) || u.search !== '' || u.hash !== '' || u.username !== '' || u.password !== '' || url.length > 500) {
    throw new AppError('invalid_body', `${field} must be an http(s) address without credentials, query or fragment (at most 500 characters)`);
  }
  return url;
}

/**
 * Calls another install of the keychain. What it answers is only read here; what it means is
 * decided by checking its signature. An install that cannot be reached, or answers something
 * that is not JSON, is `keychain_home_unreachable` (502) with what happened, never a secret.
 */
export class PeerClient {
  readonly #timeoutMs: number;

  constructor(opts: { timeoutMs?: number } = {}) {
    this.#timeoutMs = opts.timeoutMs ?? PEER_TIMEOUT_MS;
  }

  async call(address: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<PeerAnswer> {
    let res: Response;
    try {
      res = await fetch(address + path, {
        method,
        headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'error',
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).name;
      throw new AppError('keychain_home_unreachable', `${address} cannot be reached (${cause})`);
    }
    const declared = Number(res.headers.get('content-length') ?? 0);
    if (declared > MAX_ANSWER_BYTES) {
      await res.body?.cancel();
      throw new AppError('keychain_home_unreachable', `${address} answered more than ${MAX_ANSWER_BYTES} bytes`);
    }
    let text: string;
    try {
      text = await readCapped(res);
    } catch (e) {
      throw new AppError('keychain_home_unreachable', `${address}: ${(e as Error).message}`);
    }
    try {
      return { status: res.status, body: text === '' ? null : (JSON.parse(text) as unknown) };
    } catch {
      throw new AppError('keychain_home_unreachable', `${address} answered ${res.status} with something that is not JSON (is it an install of this service?)`);
    }
  }
}

async function readCapped(res: Response): Promise<string> {
  if (res.body === null) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > MAX_ANSWER_BYTES) throw new Error(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
