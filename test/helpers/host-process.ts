import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import { MARIADB_URL, withServer } from './db.ts';
import { listeningPort } from './listening.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BOOT_DEADLINE_MS = 60_000;

/** One real host process (`node host/main.ts`) on a loopback port. */
export interface HostProcess {
  name: string;
  /** http://127.0.0.1:<the port it listens on>, known once it has started. */
  base: string;
  /** The last part of what the process wrote, for failure messages. */
  output(): string;
  exited(): boolean;
  /** Its process id (a test kills it with `process.kill(pid, 'SIGKILL')`: a crash). */
  pid: number;
  /** The database the hosts share (mysql://…), for a test that looks into it. */
  databaseUrl: string;
  /** Its exit code once it has exited (null: still running, or killed by a signal). */
  exitCode(): number | null;
}

/**
 * Starts `count` host processes on one throwaway MariaDB database, each with `env` (SERVICE_*)
 * on top of what they need to run (and with `opts.nofile`, under that `ulimit -n`); waits until each listens (on a port it chose). After the test they are
 * stopped (SIGTERM, SIGKILL after 5 s), and the database and data directories removed.
 */
export async function startHostProcesses(
  t: ExecutionContext,
  count: number,
  env: Record<string, string>,
  opts: { nofile?: number } = {},
): Promise<HostProcess[]> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withServer(MARIADB_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
  const url = new URL(MARIADB_URL);
  url.pathname = `/${name}`;
  const children: ChildProcess[] = [];
  const dirs: string[] = [];
  t.teardown(async () => {
    await Promise.all(children.map(stop));
    await withServer(MARIADB_URL, (db) => db.raw(`drop database if exists \`${name}\``));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const hosts: HostProcess[] = [];
  for (let i = 0; i < count; i++) {
    const dir = mkdtempSync(path.join(tmpdir(), 'oncall-proc-'));
    dirs.push(dir);
    const childEnv: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SERVICE_') && !k.startsWith('TEST_')) childEnv[k] = v;
    Object.assign(
      childEnv,
      { SERVICE_PORT: '0', SERVICE_HOST: '127.0.0.1', SERVICE_DATA_DIR: dir, SERVICE_DATABASE_URL: url.toString(), SERVICE_LOG_LEVEL: 'warn' },
      env,
    );
    // With `nofile`, under `ulimit -n` (a host with few file descriptors).
    const child =
      opts.nofile === undefined
        ? spawn(process.execPath, ['host/main.ts'], { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] })
        : spawn('sh', ['-c', `ulimit -n ${opts.nofile} && exec "$0" host/main.ts`, process.execPath], {
            cwd: ROOT,
            env: childEnv,
            stdio: ['ignore', 'pipe', 'pipe'],
          });
    children.push(child);
    let out = '';
    const keep = (chunk: Buffer) => (out = (out + chunk.toString('utf8')).slice(-8000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const orphanGuard = () => child.kill('SIGKILL');
    process.once('exit', orphanGuard);
    child.once('exit', () => process.off('exit', orphanGuard));
    hosts.push({
      name: `host ${i + 1}`,
      base: '',
      output: () => out,
      exited: () => child.exitCode !== null || child.signalCode !== null,
      pid: child.pid!,
      databaseUrl: url.toString(),
      exitCode: () => child.exitCode,
    });
  }
  // Each host listens on a port of its own choosing (SERVICE_PORT=0) and prints it: a port picked
  // here and handed over could be taken meanwhile by another test's service, whose /health
  // answers just as well (and whose admin token is another).
  await Promise.all(
    hosts.map(async (h) => {
      const deadline = Date.now() + BOOT_DEADLINE_MS;
      while (Date.now() < deadline) {
        if (h.exited()) throw new Error(`${h.name} exited while starting:\n${h.output()}`);
        const listening = listeningPort(h.output());
        if (listening !== null) {
          h.base = `http://127.0.0.1:${listening}`;
          return;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`${h.name} did not start listening within ${BOOT_DEADLINE_MS / 1000} s:\n${h.output()}`);
    }),
  );
  return hosts;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await gone;
  clearTimeout(timer);
}

/** A JSON request to a host process: `token` as the bearer, `body` as JSON; the answer's status and parsed body. */
export async function callHost(h: HostProcess, method: string, route: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(h.base + route, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? null : JSON.parse(text) };
}
