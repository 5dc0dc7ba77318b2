import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ExecutionContext } from 'ava';

/** A local HTTP server standing in for a webhook receiver or PagerDuty; closed after the test. */
export interface Receiver {
  url: string;
  /** Every request: headers and the exact body bytes. */
  got: Array<{ path: string; headers: Record<string, string | string[] | undefined>; body: Buffer }>;
  /** What it answers from now on: a status, or `drop` (the connection is closed unanswered). */
  answer: number | 'drop';
}

export async function receiver(t: ExecutionContext, path = '/hook'): Promise<Receiver> {
  const r: Receiver = { url: '', got: [], answer: 202 };
  const srv = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'HEAD') {
        res.statusCode = 405;
        res.end();
        return;
      }
      if (r.answer === 'drop') return void req.socket.destroy();
      r.got.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.statusCode = r.answer;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ status: r.answer < 300 ? 'success' : 'error' }));
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => (srv.closeAllConnections(), srv.close(() => resolve()))));
  r.url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}${path}`;
  return r;
}
