import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import { spawnHost, type SpawnedHost } from './service-process.ts';

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

export interface TmpfsHost extends SpawnedHost {
  /** The data directory as the host sees it (a tmpfs of its own). */
  dataDir: string;
  /** The same directory as this process reaches it (through /proc/<pid>/root). */
  outside: string;
}

/**
 * Starts `node host/main.ts` with its data directory on a tmpfs of `sizeMb`, optionally filled
 * to the last byte first (`full`). Killed after the test.
 */
export function hostOnTmpfs(t: ExecutionContext, o: { sizeMb: number; full?: boolean; env: Record<string, string> }): TmpfsHost {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oncall-tmpfs-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const fill = o.full === true ? ' && { cat /dev/zero > "$SERVICE_DATA_DIR/fill" 2>/dev/null || true; }' : '';
  // sh execs node, so the child's pid is the host's and /proc/<pid>/root shows its mounts.
  const script = `mount -t tmpfs -o size=${o.sizeMb}m,mode=0700 tmpfs "$SERVICE_DATA_DIR"${fill} && exec "$0" host/main.ts`;
  const host = spawnHost(t, { SERVICE_DATA_DIR: dataDir, SERVICE_PORT: '0', SERVICE_HOST: '127.0.0.1', ...o.env }, 'unshare', [
    '-m',
    'sh',
    '-c',
    script,
    process.execPath,
  ]);
  return { ...host, dataDir, outside: `/proc/${host.child.pid}/root${dataDir}` };
}

/** Writes zeros into `file` until the disk under it is full. */
export function fillDisk(file: string): void {
  spawnSync('sh', ['-c', `cat /dev/zero > "${file}" 2>/dev/null || true`]);
}
