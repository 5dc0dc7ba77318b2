// A small web backend run by a test, behind nginx or HAProxy: `/metrics` (so Prometheus has its
// `up`), `/health`, and every other path answered with the status the test sets. Stopping it
// closes its port, as a stopped process does.
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Teardowns } from './daemon.ts';

export interface Backend {
  /** `127.0.0.1:<port>` */
  target: string;
  /** The status every path but /metrics and /health answers. */
  status: number;
  /** Closes the port and every open connection. */
  stop(): Promise<void>;
}

export async function startBackend(t: Teardowns): Promise<Backend> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    if (req.url === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end('# TYPE app_info gauge\napp_info 1\n');
    } else if (req.url === '/health') {
      res.writeHead(200);
      res.end('ok');
    } else {
      res.writeHead(b.status);
      res.end(b.status < 500 ? 'ok' : 'failed');
    }
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let stopped = false;
  const b: Backend = {
    target: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    status: 200,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  t.teardown(() => b.stop());
  return b;
}
