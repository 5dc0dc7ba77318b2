import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { ExecutionContext } from 'ava';

/** One request the fake licence server received. */
export interface LicenceServerRequest {
  method: string;
  path: string;
  body: any;
}

export type LicenceServerAnswer = 'valid' | 'revoked' | { status: number; body: unknown };

/**
 * A local stand-in for the vendor's licence server: answers POST /v1/confirm with
 * `{status, checked_at}` as `answer` says, and keeps every request it got.
 */
export interface FakeLicenceServer {
  url: string;
  requests: LicenceServerRequest[];
  answer: LicenceServerAnswer;
  close(): Promise<void>;
}

export async function startLicenceServer(t: ExecutionContext, answer: LicenceServerAnswer = 'valid'): Promise<FakeLicenceServer> {
  const fake: FakeLicenceServer = { url: '', requests: [], answer, close: async () => {} };
  const server: Server = createServer((req: IncomingMessage, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* keep the text */
      }
      fake.requests.push({ method: req.method ?? '', path: req.url ?? '', body });
      const a = fake.answer;
      const [status, out] =
        req.method !== 'POST' || req.url !== '/v1/confirm'
          ? [404, { error: 'not_found' }]
          : typeof a === 'string'
            ? [200, { status: a, checked_at: new Date().toISOString(), ...(a === 'revoked' ? { reason: 'refunded' } : {}) }]
            : [a.status, a.body];
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(out));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  fake.url = `http://127.0.0.1:${port}`;
  let closed = false;
  fake.close = () =>
    closed
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          closed = true;
          server.closeAllConnections();
          server.close(() => resolve());
        });
  t.teardown(() => fake.close());
  return fake;
}

/** An address nothing listens on (for "unreachable"). */
export async function closedAddress(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
