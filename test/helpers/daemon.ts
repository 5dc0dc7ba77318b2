import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import type { ExecutionContext } from 'ava';

/** Daemons still running: killed when the test worker exits, even after an uncaught exception skipped the teardowns. */
const alive = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of alive) c.kill('SIGKILL');
});

/**
 * Where a helper registers what undoes it: an ava test's `t`, or a benchmark's own stack of
 * teardowns (test/bench/fleet.ts), since a benchmark runs these helpers outside ava.
 */
export type Teardowns = Pick<ExecutionContext, 'teardown'>;

/**
 * Runs an outside server (Debian's Alertmanager, Prometheus, nginx, Redis …) for one test:
 * collects its output, waits until `<base>/-/ready` answers, or `ready()` answers true for a
 * server without that path (`readyS` seconds at most, 20 by default, failing early if it exits),
 * and after the test always stops it (SIGTERM, SIGKILL after 5 s) and removes `dir`.
 */
export async function startDaemon(
  t: Teardowns,
  what: {
    name: string;
    bin: string;
    args: string[];
    dir: string;
    base: string;
    readyHeaders?: Record<string, string>;
    ready?: () => Promise<boolean>;
    readyS?: number;
    env?: NodeJS.ProcessEnv;
    /** Run as this user and group (a server that refuses root, such as PostgreSQL). */
    uid?: number;
    gid?: number;
  },
): Promise<{ output: () => string; pid: number | undefined }> {
  let out = '';
  const child: ChildProcess = spawn(what.bin, what.args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: what.dir,
    env: what.env ?? process.env,
    ...(what.uid === undefined ? {} : { uid: what.uid, gid: what.gid }),
  });
  alive.add(child);
  child.once('exit', () => alive.delete(child));
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const state: { exited: string | null } = { exited: null };
  const gone = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => ((state.exited = `exited ${code ?? signal}`), resolve()));
    child.once('error', (e) => ((state.exited = `could not start: ${e.message}`), resolve())); // no 'exit' follows a failed spawn
  });
  t.teardown(async () => {
    if (state.exited === null) {
      child.kill('SIGTERM');
      const stopped = await Promise.race([gone.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]);
      if (!stopped) {
        child.kill('SIGKILL');
        await gone;
      }
    }
    rmSync(what.dir, { recursive: true, force: true });
  });
  const readyS = what.readyS ?? 20;
  const deadline = Date.now() + readyS * 1000;
  const ready =
    what.ready ??
    (() =>
      fetch(`${what.base}/-/ready`, { headers: what.readyHeaders }).then(
        (r) => r.ok,
        () => false,
      ));
  for (;;) {
    if (state.exited !== null) throw new Error(`${what.name} ${state.exited} before it was ready:\n${out}`);
    if (await ready().catch(() => false)) break;
    if (Date.now() > deadline) throw new Error(`${what.name} not ready after ${readyS} s:\n${out}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { output: () => out, pid: child.pid };
}
