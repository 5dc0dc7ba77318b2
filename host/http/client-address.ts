import net from 'node:net';
import type { Request } from 'restify';

/**
 * The address a request came from, for rate limits and the ledger: the socket peer, unless that
 * peer is a trusted proxy, in which case X-Forwarded-For is read from the right, skipping
 * trusted proxies, and the first address that is not one is the client.
 */
export class ClientAddress {
  readonly #trusted = new net.BlockList();
  readonly #any: boolean;

  constructor(trustedProxies: readonly string[]) {
    for (const p of trustedProxies) {
      const [addr, bits] = p.split('/') as [string, string | undefined];
      const type = net.isIP(addr) === 6 ? 'ipv6' : 'ipv4';
      if (bits === undefined) this.#trusted.addAddress(addr, type);
      else this.#trusted.addSubnet(addr, Number(bits), type);
    }
    this.#any = trustedProxies.length > 0;
  }

  of(req: Request): string {
    const peer = normalise(req.socket?.remoteAddress ?? 'unknown');
    if (!this.#any || !this.#isTrusted(peer)) return peer;
    const header = req.headers['x-forwarded-for'];
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
      .split(',')
      .map((h) => normalise(h.trim()))
      .filter((h) => h !== '');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!;
      if (net.isIP(hop) === 0) return peer;
      if (!this.#isTrusted(hop)) return hop;
    }
    return peer;
  }

  /** Whether a socket peer is a trusted proxy (its connections are not limited per address). */
  trusts(peer: string): boolean {
    return this.#any && this.#isTrusted(normalise(peer));
  }

  #isTrusted(addr: string): boolean {
    const type = net.isIP(addr);
    return type !== 0 && this.#trusted.check(addr, type === 6 ? 'ipv6' : 'ipv4');
  }
}

/** `::ffff:10.0.0.1` is `10.0.0.1`. */
function normalise(addr: string): string {
  return addr.startsWith('::ffff:') && net.isIP(addr.slice(7)) === 4 ? addr.slice(7) : addr;
}
