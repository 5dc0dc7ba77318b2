import { readFileSync } from 'node:fs';
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../log.ts';

/**
 * How many connections the server holds and how long it waits on them, far below Node's
 * defaults (no cap; 60 s for the headers, 300 s for a request): ~20,500 idle connections that
 * never finished their headers once took every file descriptor, so /health and sign-in were
 * refused and the tick failed with EMFILE.
 */
export interface ConnectionLimits {
  /** Connections held at once, at most; never more than the descriptors left after the reserve. */
  max: number;
  /** Connections one peer address holds at once (a trusted proxy is not limited but by `max`). */
  perClient: number;
  /** A request's headers must arrive within this (slow headers are cut off). */
  headersTimeoutMs: number;
  /** A whole request (headers and body) must arrive within this. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** A connection on which nothing moves for this long is closed. */
  idleTimeoutMs: number;
}

/** Descriptors kept for the process's own work: the database, files, outgoing calls, git. */
export const DESCRIPTOR_RESERVE_MIN = 256;

export const DEFAULT_LIMITS: Omit<ConnectionLimits, 'max' | 'perClient'> = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 120_000,
};

/** The process's soft limit of open files (`ulimit -n`, which Node raises to the hard one), or null when unknown. */
export function openFilesLimit(): number | null {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m === null || m[1] === 'unlimited' ? null : Number(m[1]);
  } catch {
    return null;
  }
}

/**
 * The cap in force: the configured one, lowered so that the reserve (an eighth of the
 * descriptors, at least DESCRIPTOR_RESERVE_MIN) always stays free for the process's own work.
 */
export function connectionCap(configured: number, nofile: number | null): { max: number; reserve: number | null } {
  if (nofile === null) return { max: configured, reserve: null };
  const reserve = Math.max(DESCRIPTOR_RESERVE_MIN, Math.ceil(nofile / 8));
  return { max: Math.max(16, Math.min(configured, nofile - reserve)), reserve };
}

interface Held {
  client: string;
  /** Requests being answered on it now; 0: idle (waiting for headers or for the next request). */
  busy: number;
}

/**
 * Applies the limits to the HTTP server. Beyond a cap the connection given up is the oldest
 * **idle** one (no request being answered on it: slow or unfinished headers, an idle keep-alive):
 * of the same peer when the peer is over its share, else of anyone; only when none is idle is
 * the new connection refused. So idle connections, however many are opened, can never keep a
 * request (a health probe, a sign-in) out, nor take the descriptors the process needs.
 */
export function guardConnections(server: HttpServer, limits: ConnectionLimits, trusts: (peer: string) => boolean, log: Logger): { held(): number } {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.timeout = limits.idleTimeoutMs;
  // How often Node looks for connections past those times (read when it starts listening).
  (server as HttpServer & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(1000, limits.headersTimeoutMs);

  // Insertion order is age: the first idle one met is the oldest.
  const all = new Map<Socket, Held>();
  const byClient = new Map<string, Set<Socket>>();
  let refused = 0;
  let lastReport = 0;

  const forget = (socket: Socket) => {
    const h = all.get(socket);
    if (h === undefined) return;
    all.delete(socket);
    const mine = byClient.get(h.client);
    mine?.delete(socket);
    if (mine?.size === 0) byClient.delete(h.client);
  };
  const oldestIdle = (sockets: Iterable<Socket>, except: Socket): Socket | undefined => {
    for (const s of sockets) if (s !== except && all.get(s)?.busy === 0) return s;
    return undefined;
  };
  const report = () => {
    refused++;
    const now = Date.now();
    if (now - lastReport < 60_000) return;
    lastReport = now;
    log.warn(
      { connections: all.size, refused, max: limits.max, per_client: limits.perClient },
      'connection limit reached: idle connections closed or new ones refused',
    );
    refused = 0;
  };

  server.on('connection', (socket: Socket) => {
    const client = normalise(socket.remoteAddress ?? 'unknown');
    all.set(socket, { client, busy: 0 });
    let mine = byClient.get(client);
    if (mine === undefined) byClient.set(client, (mine = new Set()));
    mine.add(socket);
    socket.once('close', () => forget(socket));
    if (!trusts(client) && mine.size > limits.perClient) {
      report();
      (oldestIdle(mine, socket) ?? socket).destroy();
    }
    if (all.size > limits.max && !socket.destroyed) {
      report();
      (oldestIdle(all.keys(), socket) ?? socket).destroy();
    }
  });
  onEveryRequest(server, (req, res) => {
    const h = all.get(req.socket);
    if (h === undefined) return;
    h.busy++;
    let done = false;
    const end = () => {
      if (done) return;
      done = true;
      h.busy--;
    };
    res.once('finish', end);
    res.once('close', end);
  });
  return { held: () => all.size };
}

/**
 * Calls `listener` for every request the server takes, `prepend`ed or not. A request with
 * `Expect: 100-continue` comes as 'checkContinue' instead of 'request': restify listens for it
 * and answers the Expect itself (on a bare Node server, a listener here would leave that answer
 * to the listener).
 */
export function onEveryRequest(server: HttpServer, listener: (req: IncomingMessage, res: ServerResponse) => void, prepend = false): void {
  for (const event of ['request', 'checkContinue'] as const) {
    if (prepend) server.prependListener(event, listener);
    else server.on(event, listener);
  }
}

/** `::ffff:10.0.0.1` is `10.0.0.1`. */
function normalise(addr: string): string {
  return addr.startsWith('::ffff:') ? addr.slice(7) : addr;
}
