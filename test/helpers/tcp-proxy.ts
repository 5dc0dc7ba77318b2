import { createServer, connect, type Server, type Socket } from 'node:net';
import type { ExecutionContext } from 'ava';

/**
 * A TCP relay in front of a real server (MariaDB) that a test can cut: `cut()` drops every
 * connection and refuses new ones, as a database host going away does; `restore()` listens
 * again on the same port.
 */
export async function tcpProxy(
  t: ExecutionContext,
  target: { host: string; port: number },
): Promise<{ port: number; cut(): Promise<void>; restore(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer((client) => {
        const upstream = connect(target.port, target.host);
        for (const sock of [client, upstream]) {
          sockets.add(sock);
          sock.once('close', () => sockets.delete(sock));
          sock.on('error', () => {
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream).pipe(client);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as { port: number }).port;
        server = s;
        resolve();
      });
    });
  const cut = async () => {
    const s = server;
    server = null;
    for (const sock of sockets) sock.destroy();
    if (s !== null) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  await listen();
  t.teardown(cut);
  return { port, cut, restore: listen };
}
