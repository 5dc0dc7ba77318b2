import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Why a test cannot give a host process a small disk of its own (a tmpfs mounted in a private
 * mount namespace: `unshare -m` and `mount` need root), or null when it can. The mount lives and
 * dies with the process; nothing is mounted where other processes see it.
 */
export const tmpfsMissing: string | null = (() => {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-tmpfs-probe-'));
  try {
    const r = spawnSync('unshare', ['-m', 'sh', '-c', `mount -t tmpfs -o size=1m tmpfs "${dir}"`], { encoding: 'utf8' });
    return r.status === 0 ? null : `cannot mount a tmpfs in a private mount namespace (unshare -m, root): ${(r.stderr || r.error?.message || '').trim()}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
})();

export interface TmpfsHost {
  child: ChildProcess;
  /** The data directory as the host sees it (a tmpfs of its own). */
  dataDir: string;
  /** The same directory as this process reaches it (through /proc/<pid>/root). */
  outside: string;
  output(): string;
  exited: Promise<number | null>;
}

/**
 * Starts `node host/main.ts` with its data directory on a tmpfs of `sizeMb`, optionally filled
 * to the last byte first (`full`). Killed after the test.
 */
export function hostOnTmpfs(t: ExecutionContext, o: { sizeMb: number; full?: boolean; env: Record<string, string> }): TmpfsHost {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oncall-tmpfs-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SERVICE_') && !k.startsWith('TEST_')) env[k] = v;
  Object.assign(env, { SERVICE_DATA_DIR: dataDir, SERVICE_PORT: '0', SERVICE_HOST: '127.0.0.1' }, o.env);
  const fill = o.full === true ? ' && { cat /dev/zero > "$SERVICE_DATA_DIR/fill" 2>/dev/null || true; }' : '';
  // sh execs node, so the child's pid is the host's and /proc/<pid>/root shows its mounts.
  const script = `mount -t tmpfs -o size=${o.sizeMb}m,mode=0700 tmpfs "$SERVICE_DATA_DIR"${fill} && exec "$0" host/main.ts`;
  const child = spawn('unshare', ['-m', 'sh', '-c', script, process.execPath], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { child, dataDir, outside: `/proc/${child.pid}/root${dataDir}`, output: () => out, exited };
}

/** Writes zeros into `file` until the disk under it is full. */
export function fillDisk(file: string): void {
  spawnSync('sh', ['-c', `cat /dev/zero > "${file}" 2>/dev/null || true`]);
}
