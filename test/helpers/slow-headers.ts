import net from 'node:net';

/**
 * `count` connections from `from` (loopback addresses) that send the start of a request and
 * never finish its headers. Answers how many the server has closed so far, and a stop that
 * closes the rest. Bounded: nothing is opened again.
 */
export async function slowHeaders(port: number, from: string[], count: number): Promise<{ closed: () => number; stop: () => void }> {
  const sockets: net.Socket[] = [];
  let closed = 0;
  await Promise.all(
    Array.from(
      { length: count },
      (_, i) =>
        new Promise<void>((resolve) => {
          const s = net.connect({ port, host: '127.0.0.1', localAddress: from[i % from.length] });
          sockets.push(s);
          s.on('error', () => {});
          s.once('close', () => {
            closed++;
            resolve();
          });
          s.once('connect', () => {
            s.write('GET /health HTTP/1.1\r\nHost: oncall\r\nX-Slow: ');
            resolve();
          });
        }),
    ),
  );
  return { closed: () => closed, stop: () => sockets.forEach((s) => s.destroy()) };
}
