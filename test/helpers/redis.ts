// Debian's redis-server and prometheus-redis-exporter for a test or the eval: a Redis of the
// test's own on a loopback port (never the machine's on 6379), keeping nothing on disk, and its
// exporter; each stopped and its files removed by its teardown. No test runtime in here.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startDaemon, type Teardowns } from './daemon.ts';
import { freePort } from './wait.ts';

export const REDIS_BIN = process.env.REDIS_BIN?.trim() || '/usr/bin/redis-server';
export const REDIS_CLI = process.env.REDIS_CLI?.trim() || '/usr/bin/redis-cli';
export const REDIS_EXPORTER_BIN = process.env.REDIS_EXPORTER_BIN?.trim() || '/usr/bin/prometheus-redis-exporter';

/** Whether a Redis answers PING on `port` (one connection, closed at once). */
function pong(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => s.write('PING\r\n'));
    s.setTimeout(1000, () => (s.destroy(), resolve(false)));
    s.once('data', (d) => (s.destroy(), resolve(d.toString().startsWith('+PONG'))));
    s.once('error', () => resolve(false));
  });
}

export interface RunningRedis {
  port: number;
  /** `127.0.0.1:<port>` */
  address: string;
  /** The server's process id (to stop it as a crash would). */
  pid: number | undefined;
  /** One command through redis-cli; answers its output, trimmed. */
  cli(...args: string[]): Promise<string>;
}

/**
 * redis-server in the foreground on a loopback port with no persistence; `maxmemory` (with its
 * policy), `maxclients` and `replicaof` (`host:port`) as given.
 */
export async function startRedis(
  t: Teardowns,
  o: { maxmemory?: string; policy?: string; maxclients?: number; replicaOf?: string; port?: number } = {},
): Promise<RunningRedis> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-redis-'));
  const port = o.port ?? (await freePort());
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no'];
  if (o.maxmemory !== undefined) args.push('--maxmemory', o.maxmemory, '--maxmemory-policy', o.policy ?? 'allkeys-lru');
  if (o.maxclients !== undefined) args.push('--maxclients', String(o.maxclients));
  if (o.replicaOf !== undefined) args.push('--replicaof', ...o.replicaOf.split(':'));
  const { pid } = await startDaemon(t, { name: 'redis-server', bin: REDIS_BIN, args, dir, base: '', ready: () => pong(port) });
  const run = promisify(execFile);
  return {
    port,
    address: `127.0.0.1:${port}`,
    pid,
    cli: async (...a) => (await run(REDIS_CLI, ['-h', '127.0.0.1', '-p', String(port), ...a])).stdout.trim(),
  };
}

/** The ACL rules of the monitoring account packs/redis/README.md documents: what the exporter runs, nothing else. */
export const EXPORTER_ACL = ['on', '-@all', '+ping', '+info', '+config|get', '+client|setname', '+slowlog', '+latency'];

/** Gives `r` the exporter's monitoring account (ACL user `user`, password `password`). */
export async function monitoringAccount(r: RunningRedis, user: string, password: string): Promise<void> {
  await r.cli('ACL', 'SETUSER', user, 'reset', ...EXPORTER_ACL, `>${password}`);
}

/**
 * prometheus-redis-exporter of the Redis at `address` (as `account`, with its password in a file,
 * when given): answers its scrape target `127.0.0.1:<port>`.
 */
export async function startRedisExporter(
  t: Teardowns,
  address: string,
  o: { port?: number; account?: { user: string; password: string } } = {},
): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-redis-exporter-'));
  const target = `127.0.0.1:${o.port ?? (await freePort())}`;
  const auth: string[] = [];
  if (o.account !== undefined) {
    // The exporter's password file maps each Redis address to its password (JSON).
    writeFileSync(path.join(dir, 'password'), JSON.stringify({ [`redis://${address}`]: o.account.password }), { mode: 0o600 });
    auth.push(`-redis.user=${o.account.user}`, `-redis.password-file=${path.join(dir, 'password')}`);
  }
  await startDaemon(t, {
    name: 'prometheus-redis-exporter',
    bin: REDIS_EXPORTER_BIN,
    args: [`-redis.addr=redis://${address}`, `-web.listen-address=${target}`, ...auth],
    dir,
    base: '',
    ready: () =>
      fetch(`http://${target}/metrics`).then(
        (r) => r.ok,
        () => false,
      ),
  });
  return target;
}

/**
 * Writes `keys` values of `bytes` each, 20 to a server-side script: past `maxmemory` an
 * `allkeys-lru` Redis evicts keys before each script and a `noeviction` one refuses the next
 * script with OOM, which ends the filling and is answered (redis-cli's output), not thrown.
 */
export async function fill(r: RunningRedis, keys: number, bytes: number, prefix = 'fill:'): Promise<string> {
  const script = "for i=1,tonumber(ARGV[1]) do redis.call('SET', KEYS[1]..ARGV[2]..':'..i, string.rep('x', tonumber(ARGV[3]))) end return 'OK'";
  let last = '';
  for (let done = 0; done < keys; done += 20) {
    last = await r
      .cli('EVAL', script, '1', prefix, String(Math.min(20, keys - done)), String(done), String(bytes))
      .catch((e: Error & { stdout?: string }) => e.stdout ?? e.message);
    if (last.includes('OOM')) break;
  }
  return last;
}
