import { createServer, connect, type Server, type Socket } from 'node:net';
import type { ExecutionContext } from 'ava';

/**
 * A TCP relay in front of a real server (MariaDB) that a test can cut: `cut()` drops every
 * connection and refuses new ones, as a database host going away does; `restore()` listens
 * again on the same port. `freeze()` keeps every connection open and accepts new ones but moves no
 * byte either way, as a database host that hangs (SIGSTOP, a frozen VM) does; `thaw()` lets them go on.
 */
export async function tcpProxy(
  t: ExecutionContext,
  target: { host: string; port: number },
): Promise<{ port: number; cut(): Promise<void>; restore(): Promise<void>; freeze(): void; thaw(): void }> {
  const sockets = new Set<Socket>();
  let frozen = false;
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
        if (frozen) for (const sock of [client, upstream]) sock.pause();
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
  // A paused socket reads nothing: what one side sends stays in the kernel's buffers, unanswered.
  const freeze = () => {
    frozen = true;
    for (const sock of sockets) sock.pause();
  };
  const thaw = () => {
    frozen = false;
    for (const sock of sockets) sock.resume();
  };
  await listen();
  t.teardown(cut);
  return { port, cut, restore: listen, freeze, thaw };
}
