/**
 * The outside system `bench:act` acts on: one node:http server on loopback standing in for every
 * service's health endpoint and for the runbook endpoint (a Rundeck/AWX-like job trigger).
 *
 * - `GET /ok`: 200, the http connector's own test (`health_path`).
 * - `GET /health/<service>`: 503 while the service is marked down (`down()`), else 200; so
 *   `http/endpoint-down` holds until the runbook has restarted the service.
 * - `POST /runbook/restart`: needs `Authorization: Bearer <token>`; a dry run (`dry_run: true`)
 *   answers 200 and changes nothing; a real run marks the service up and answers 200. Every
 *   call is counted by service, so the benchmark can check that each episode's runbook ran
 *   exactly once.
 */
import http from 'node:http';
import type net from 'node:net';

const HOST = '127.0.0.1';
const MAX_BODY = 64 * 1024;

/** What the runbook endpoint received for one service. */
export interface RunbookCalls {
  dry_runs: number;
  runs: number;
  /** The Idempotency-Key of each real run. */
  keys: string[];
}

export interface Peer {
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** Marks services down: their health URL answers 503 until a runbook restart runs for them. */
  down(services: string[]): void;
  /** The runbook calls received, by service. */
  calls(service: string): RunbookCalls;
  /** Requests refused for a missing or wrong token. */
  unauthorised(): number;
  /** Forgets every call and marks every service up: a new run starts. */
  reset(): void;
  close(): Promise<void>;
}

interface RunbookBody {
  runbook?: unknown;
  episode?: { service?: unknown };
  key?: unknown;
  dry_run?: unknown;
}

function reply(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Starts the peer on a free loopback port; `token` is the runbook endpoint's bearer token. */
export async function startPeer(token: string): Promise<Peer> {
  const downSet = new Set<string>();
  const calls = new Map<string, RunbookCalls>();
  let unauthorised = 0;
  const callsOf = (service: string): RunbookCalls => {
    let c = calls.get(service);
    if (c === undefined) calls.set(service, (c = { dry_runs: 0, runs: 0, keys: [] }));
    return c;
  };

  const runbook = (req: http.IncomingMessage, res: http.ServerResponse, text: string) => {
    if (req.headers.authorization !== `Bearer ${token}`) {
      unauthorised++;
      return reply(res, 401, { error: 'unauthorised' });
    }
    let body: RunbookBody;
    try {
      body = JSON.parse(text) as RunbookBody;
    } catch {
      return reply(res, 400, { error: 'not JSON' });
    }
    const service = body.episode?.service;
    if (body.runbook !== 'restart' || typeof service !== 'string') return reply(res, 400, { error: 'expected runbook restart for a service' });
    const c = callsOf(service);
    if (body.dry_run === true) {
      c.dry_runs++;
      return reply(res, 200, { dry_run: true, would: `restart ${service}` });
    }
    c.runs++;
    c.keys.push(String(req.headers['idempotency-key'] ?? ''));
    downSet.delete(service);
    return reply(res, 200, { started: true, job: `restart ${service}` });
  };

  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    if (req.method === 'GET' && url === '/ok') return reply(res, 200, { ok: true });
    if (req.method === 'GET' && url.startsWith('/health/')) {
      const service = decodeURIComponent(url.slice('/health/'.length));
      return downSet.has(service) ? reply(res, 503, { status: 'down' }) : reply(res, 200, { status: 'up' });
    }
    if (req.method === 'POST' && url === '/runbook/restart') {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= MAX_BODY) chunks.push(c);
      });
      req.on('end', () => (size > MAX_BODY ? reply(res, 413, { error: 'too large' }) : runbook(req, res, Buffer.concat(chunks).toString('utf8'))));
      return;
    }
    reply(res, 404, { error: 'not_found' });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, HOST, () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    base: `http://${HOST}:${port}`,
    down: (services) => {
      for (const s of services) downSet.add(s);
    },
    calls: (service) => callsOf(service),
    unauthorised: () => unauthorised,
    reset: () => {
      calls.clear();
      downSet.clear();
      unauthorised = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
