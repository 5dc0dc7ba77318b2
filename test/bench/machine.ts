/**
 * `npm run bench:machine`: what the machine itself does, with no code of ours, so that another
 * benchmark's figures can be read against the machine they ran on (docs/performance.md, "A machine
 * of a fifth of the speed"). Three figures, each a few seconds:
 *   1. arithmetic: a loop of 3·10⁸ additions in Node (ms);
 *   2. the disk: 200 writes of 512 bytes each followed by `fsync`, in the temporary directory (ms each);
 *   3. loopback: a Node HTTP server answering 202 to a Node client in this process, 32 requests at
 *      a time with keep-alive, for 5 s (requests/s) — every intake figure is requests on loopback.
 * Flags (or env): --seconds S (BENCH_DURATION, 5).
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { count, heading, machine, round1, runBenchmark } from './common.ts';

function loopMs(): number {
  const started = performance.now();
  let x = 0;
  for (let i = 0; i < 3e8; i++) x += i % 7;
  if (x < 0) throw new Error('unreachable');
  return Math.round(performance.now() - started);
}

function fsyncMs(): number {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'oncall-bench-machine-'));
  const fd = openSync(path.join(dir, 'probe'), 'w');
  const n = 200;
  const block = Buffer.alloc(512, 120);
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    writeSync(fd, block);
    fsyncSync(fd);
  }
  const each = (performance.now() - started) / n;
  closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
  return Math.round(each * 100) / 100;
}

async function loopbackPerSecond(seconds: number): Promise<number> {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(202, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const end = Date.now() + seconds * 1000;
  let answered = 0;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/', agent }, (res) => res.resume().on('end', resolve));
      req.on('error', reject);
      req.end('{"status":"firing"}');
    });
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (Date.now() < end) {
        await one();
        answered++;
      }
    }),
  );
  agent.destroy();
  await new Promise((resolve) => server.close(resolve));
  return Math.round(answered / seconds);
}

await runBenchmark('machine', async () => {
  const started = new Date();
  const seconds = count('seconds', 'BENCH_DURATION', 5);
  const loop_ms = loopMs();
  const fsync_ms = fsyncMs();
  const loopback_per_s = await loopbackPerSecond(seconds);
  process.stdout.write(`${heading('Machine', started)}\n\n`);
  process.stdout.write(`3·10⁸ additions in Node             ${loop_ms} ms\n`);
  process.stdout.write(`512-byte write + fsync              ${round1(fsync_ms)} ms each (in ${os.tmpdir()})\n`);
  process.stdout.write(`HTTP on loopback, 32 at a time       ${loopback_per_s.toLocaleString('en')} requests/s\n\n`);
  process.stdout.write(`${JSON.stringify({ ...machine('machine', started), loop_ms, fsync_ms, loopback_per_s })}\n`);
});
