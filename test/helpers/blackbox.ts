// Debian's blackbox exporter and dnsmasq for the blackbox pack's live tests: the exporter with a
// modules file of the test's own, a DNS server of the test's own on a loopback port (its records
// changed by restarting it), each stopped and removed after the test.
import { spawn, type ChildProcess } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { startDaemon } from './daemon.ts';
import { BLACKBOX_BIN, DNSMASQ_BIN } from './exporter-bins.ts';
import { freePort, waitFor } from './wait.ts';

/** Why the blackbox exporter cannot run here, or null. */
export const blackboxMissing: string | null = existsSync(BLACKBOX_BIN) ? null : `${BLACKBOX_BIN} not found (apt-get install prometheus-blackbox-exporter)`;
/** Why dnsmasq cannot run here, or null. */
export const dnsmasqMissing: string | null = existsSync(DNSMASQ_BIN) ? null : `${DNSMASQ_BIN} not found (apt-get install dnsmasq-base)`;

/** Starts the blackbox exporter with `modules` (the YAML under `modules:`) and answers its `host:port`. */
export async function startBlackbox(t: ExecutionContext, modules: string): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-blackbox-'));
  writeFileSync(path.join(dir, 'blackbox.yml'), `modules:\n${modules}`);
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  await startDaemon(t, {
    name: 'blackbox_exporter',
    bin: BLACKBOX_BIN,
    args: [`--config.file=${path.join(dir, 'blackbox.yml')}`, `--web.listen-address=${address}`],
    dir,
    base: `http://${address}`,
  });
  return address;
}

export interface Dns {
  /** `127.0.0.1:<port>`: the server a DNS probe targets. */
  server: string;
  /** Serves exactly these A records (name → address) from now on; every other name under `bank.test` is NXDOMAIN. */
  serve(records: Record<string, string>): Promise<void>;
  /** Stops answering at all. */
  stop(): Promise<void>;
}

/**
 * dnsmasq on a loopback port, authoritative for `bank.test` (`--local`) with the records given,
 * reading no file of the machine's (`--conf-file=/dev/null`, no hosts, no resolv.conf). Its
 * records change by restarting it on the same port.
 */
export async function startDns(t: ExecutionContext, records: Record<string, string>): Promise<Dns> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-dnsmasq-'));
  const port = await freePort();
  let child: ChildProcess | null = null;
  const stop = async () => {
    const c = child;
    child = null;
    if (c === null || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGKILL');
    });
  };
  t.teardown(async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const resolver = new Resolver({ timeout: 500, tries: 1 });
  resolver.setServers([`127.0.0.1:${port}`]);
  const serve = async (r: Record<string, string>) => {
    await stop();
    const args = [
      '--keep-in-foreground',
      '--conf-file=/dev/null',
      `--pid-file=${path.join(dir, 'pid')}`,
      '--no-hosts',
      '--no-resolv',
      '--bind-interfaces',
      '--listen-address=127.0.0.1',
      `--port=${port}`,
      '--local=/bank.test/',
      ...Object.entries(r).map(([name, ip]) => `--host-record=${name},${ip}`),
    ];
    const c = spawn(DNSMASQ_BIN, args, { stdio: 'ignore' });
    child = c;
    // Answering once an unknown name under bank.test gets its NXDOMAIN.
    await waitFor(
      'dnsmasq to answer',
      async () => {
        if (c.exitCode !== null) throw new Error(`dnsmasq exited ${c.exitCode}`);
        return resolver.resolve4('nothing-here.bank.test').then(
          () => true,
          (e: NodeJS.ErrnoException) => e.code === 'ENOTFOUND',
        );
      },
      10_000,
      50,
    );
  };
  await serve(records);
  return { server: `127.0.0.1:${port}`, serve, stop };
}
