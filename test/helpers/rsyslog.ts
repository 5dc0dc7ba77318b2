import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';

/** Why Debian's rsyslog cannot run here, or null when it can. */
export const rsyslogMissing: string | null = existsSync('/usr/sbin/rsyslogd') ? null : 'Debian rsyslog is not installed (apt-get install rsyslog)';

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/**
 * Debian's rsyslogd for one test, as a central log server would be: it listens on loopback on UDP
 * and TCP (RFC 5424, octet counting) and writes each message as received (`%rawmsg%`) to a file.
 * Stopped and removed after the test.
 */
export async function startRsyslog(t: ExecutionContext): Promise<{ udp: number; tcp: number; lines: () => string[] }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-rsyslog-'));
  const [udp, tcp] = [await freePort(), await freePort()];
  const file = path.join(dir, 'received.log');
  writeFileSync(
    path.join(dir, 'rsyslog.conf'),
    [
      `global(workDirectory="${dir}")`,
      'module(load="imudp")',
      `input(type="imudp" address="127.0.0.1" port="${udp}")`,
      'module(load="imtcp")',
      `input(type="imtcp" address="127.0.0.1" port="${tcp}")`,
      'template(name="raw" type="string" string="%rawmsg%\\n")',
      `*.* action(type="omfile" file="${file}" template="raw")`,
      '',
    ].join('\n'),
  );
  let out = '';
  const child: ChildProcess = spawn('/usr/sbin/rsyslogd', ['-n', '-f', path.join(dir, 'rsyslog.conf'), '-i', path.join(dir, 'rsyslogd.pid')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const guard = () => child.kill('SIGKILL');
  process.once('exit', guard);
  t.teardown(async () => {
    process.off('exit', guard);
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await gone;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  });
  // Ready once its TCP input accepts a connection.
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`rsyslogd exited: ${out}`);
    const up = await new Promise<boolean>((resolve) => {
      const s = connect({ port: tcp, host: '127.0.0.1' });
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up) break;
    if (Date.now() > deadline) throw new Error(`rsyslogd not listening after 20 s: ${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    udp,
    tcp,
    lines: () =>
      existsSync(file)
        ? readFileSync(file, 'utf8')
            .split('\n')
            .filter((l) => l !== '')
        : [],
  };
}
