import tls from 'node:tls';
import type { Client } from 'ldapts';
import { ldapts } from './ldapts.ts';

/** A server certificate as a person decides whether to trust it. */
export interface CertificateInfo {
  subject: string;
  issuer: string;
  /** SHA-256 of the DER certificate, `AB:CD:…` (what the settings' `fingerprint` takes). */
  fingerprint: string;
  valid_from: string;
  valid_to: string;
}

/** The server's certificate is neither trusted by the system's authorities nor the pinned one. */
export class UntrustedCertificate extends Error {
  readonly certificate: CertificateInfo;
  readonly reason: string;
  constructor(certificate: CertificateInfo, reason: string) {
    super(`the server's certificate is not trusted (${reason}): ${certificate.subject}, SHA-256 ${certificate.fingerprint}`);
    this.certificate = certificate;
    this.reason = reason;
  }
}

/** No address answered over TLS; `tried` says what each did. */
export class DirectoryUnreachable extends Error {
  readonly tried: Attempt[];
  constructor(tried: Attempt[]) {
    super(`no directory address answered over TLS: ${tried.map((t) => `${t.url}: ${t.problem ?? 'ok'}`).join('; ')}`);
    this.tried = tried;
  }
}

export interface Attempt {
  url: string;
  ok: boolean;
  problem: string | null;
  certificate?: CertificateInfo;
}

export interface Connected {
  client: Client;
  url: string;
  tls: 'ldaps' | 'starttls';
  tried: Attempt[];
}

/** `AB:CD:…` upper case, from any spelling of the 32 bytes (colons or not, any case). */
export function normaliseFingerprint(text: string): string | null {
  const hex = text.replace(/[:\s]/g, '').toUpperCase();
  if (!/^[0-9A-F]{64}$/.test(hex)) return null;
  return hex.match(/../g)!.join(':');
}

/**
 * The addresses to try, in order: a URL as given (`ldaps://` as is, `ldap://` with StartTLS),
 * a bare name (`dc1.bank.example`, `dc1.bank.example:1636`) first as `ldaps://` and then as
 * `ldap://` with StartTLS. Nothing is ever tried without TLS.
 */
export function candidateUrls(addresses: readonly string[]): string[] {
  const out: string[] = [];
  for (const raw of addresses) {
    const a = raw.trim();
    if (a === '') continue;
    if (/^ldaps?:\/\//i.test(a)) out.push(a.replace(/\/+$/, ''));
    else out.push(`ldaps://${a}`, `ldap://${a}`);
  }
  return [...new Set(out)];
}

function describeCert(c: tls.PeerCertificate): CertificateInfo {
  const name = (o: unknown): string =>
    o !== null && typeof o === 'object'
      ? Object.entries(o as Record<string, string | string[]>)
          .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('+') : v}`)
          .join(', ')
      : '';
  return { subject: name(c.subject), issuer: name(c.issuer), fingerprint: c.fingerprint256, valid_from: c.valid_from, valid_to: c.valid_to };
}

/**
 * `tls.connect` for ldapts (ldaps:// and StartTLS alike) that trusts a server whose certificate
 * the system's authorities vouch for (chain and host name), or whose certificate is exactly the
 * pinned one. Anything else is refused before ldapts sees the connection as made: the socket
 * ends with an UntrustedCertificate carrying what a person needs to decide.
 */
function trustingConnect(host: string, pin: string | null): typeof tls.connect {
  return ((...args: unknown[]) => {
    // ldapts calls (port, host, options) for ldaps:// and (options) for StartTLS.
    const given = (typeof args[0] === 'object' ? args[0] : args[2]) as tls.ConnectionOptions | undefined;
    const options: tls.ConnectionOptions = { ...given, host, rejectUnauthorized: false, minVersion: 'TLSv1.2' };
    if (!net_isIp(host)) options.servername = host;
    const socket = typeof args[0] === 'object' ? tls.connect(options) : tls.connect(args[0] as number, host, options);
    const emit = socket.emit.bind(socket) as (event: string | symbol, ...a: unknown[]) => boolean;
    socket.emit = ((event: string | symbol, ...a: unknown[]): boolean => {
      if (event === 'secureConnect') {
        const cert = socket.getPeerCertificate();
        const pinned = pin !== null && cert.fingerprint256 === pin;
        if (!socket.authorized && !pinned) {
          socket.destroy(new UntrustedCertificate(describeCert(cert), String(socket.authorizationError ?? 'unknown')));
          return false;
        }
      }
      return emit(event, ...a);
    }) as typeof socket.emit;
    return socket;
  }) as typeof tls.connect;
}

const net_isIp = (h: string): boolean => /^[\d.]+$/.test(h) || h.includes(':');

function hostOf(url: string): string {
  const u = new URL(url);
  return u.hostname.replace(/^\[|\]$/g, '');
}

function problemOf(err: unknown): string {
  if (err instanceof UntrustedCertificate) return err.message;
  const e = err as { code?: string; message?: string };
  return String(e?.code ?? e?.message ?? err).slice(0, 300);
}

/**
 * Connects to the first of `urls` that answers over TLS (failover in order), trusting the
 * system's authorities or the pinned certificate. Binds as `bind` when given (a refused bind
 * is the caller's to judge: it is thrown as is, not tried on the next address).
 */
export async function connect(
  urls: readonly string[],
  opts: { fingerprint: string | null; timeoutMs: number; bind?: { dn: string; password: string } },
): Promise<Connected> {
  const tried: Attempt[] = [];
  for (const url of urls) {
    const host = hostOf(url);
    const secure = url.toLowerCase().startsWith('ldaps://');
    const client = new (ldapts().Client)({
      url,
      timeout: opts.timeoutMs,
      connectTimeout: opts.timeoutMs,
      strictDN: false,
      createSecureConnection: trustingConnect(host, opts.fingerprint),
      tlsOptions: {},
    });
    try {
      if (!secure) await client.startTLS({});
      if (opts.bind !== undefined) await bindOrThrow(client, opts.bind, url, tried);
      else await client.search('', { scope: 'base', filter: '(objectClass=*)', attributes: ['vendorName'] }).catch(rethrowTransport);
      tried.push({ url, ok: true, problem: null });
      return { client, url, tls: secure ? 'ldaps' : 'starttls', tried };
    } catch (err) {
      await client.unbind().catch(() => undefined);
      if (err instanceof BindRefused) throw err;
      tried.push({ url, ok: false, problem: problemOf(err), ...(err instanceof UntrustedCertificate ? { certificate: err.certificate } : {}) });
    }
  }
  throw new DirectoryUnreachable(tried);
}

/** A bind the server refused (wrong password, disabled account): not a reason to fail over. */
export class BindRefused extends Error {
  readonly url: string;
  readonly tried: Attempt[];
  constructor(url: string, tried: Attempt[], cause: unknown) {
    super(`the directory refused the bind: ${problemOf(cause)}`);
    this.url = url;
    this.tried = tried;
  }
}

async function bindOrThrow(client: Client, bind: { dn: string; password: string }, url: string, tried: Attempt[]): Promise<void> {
  // An empty password is an unauthenticated bind, which many servers accept: never send one.
  if (bind.password === '') throw new BindRefused(url, tried, new Error('empty password'));
  try {
    await client.bind(bind.dn, bind.password);
  } catch (err) {
    if (isLdapResult(err)) throw new BindRefused(url, tried, err);
    throw err;
  }
}

/** An answer of the server (an LDAP result code), as opposed to a transport failure. */
export function isLdapResult(err: unknown): boolean {
  return typeof (err as { code?: unknown })?.code === 'number';
}

function rethrowTransport(err: unknown): never {
  throw err;
}

/** Closes quietly. */
export async function close(c: Connected | Client | null): Promise<void> {
  const client = c === null ? null : c instanceof ldapts().Client ? c : c.client;
  await client?.unbind().catch(() => undefined);
}
