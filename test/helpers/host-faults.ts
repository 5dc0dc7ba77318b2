// Real host faults for the host pack's live tests, each made where nothing else on the machine is
// touched: an OOM kill inside a memory cgroup of the test's own, dropped packets on a veth pair in
// a network namespace of its own, a loop device kept busy. Each needs root; `*Missing` says why
// one cannot be made here (the test is then skipped, or failed under CI=true).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { ExecutionContext } from 'ava';
import { waitFor } from './wait.ts';

const V1 = '/sys/fs/cgroup/memory';
const V2 = '/sys/fs/cgroup';

/** Why a memory cgroup of the test's own cannot be made (cgroup v1 or v2, root), or null. */
export const oomMissing: string | null = (() => {
  if (process.getuid?.() !== 0) return 'not root: a memory cgroup of its own needs root';
  if (existsSync(`${V1}/memory.limit_in_bytes`) || existsSync(`${V2}/cgroup.controllers`)) return null;
  return 'no memory cgroup controller (cgroup v1 memory or cgroup v2) is mounted';
})();

/**
 * Runs a process that asks for 256 MiB inside a new memory cgroup limited to 32 MiB (swap
 * included), so that the kernel's OOM killer kills it: `node_vmstat_oom_kill` goes up by one on
 * the whole machine. Resolves with the signal it died of; the cgroup is removed.
 */
export async function oomKill(): Promise<string | null> {
  const name = `oncall-oom-${randomBytes(4).toString('hex')}`;
  const v1 = existsSync(`${V1}/memory.limit_in_bytes`);
  const dir = v1 ? `${V1}/${name}` : `${V2}/${name}`;
  mkdirSync(dir);
  try {
    const limit = String(32 * 1024 * 1024);
    if (v1) {
      writeFileSync(`${dir}/memory.limit_in_bytes`, limit);
      if (existsSync(`${dir}/memory.memsw.limit_in_bytes`)) writeFileSync(`${dir}/memory.memsw.limit_in_bytes`, limit);
    } else {
      writeFileSync(`${dir}/memory.max`, limit);
      if (existsSync(`${dir}/memory.swap.max`)) writeFileSync(`${dir}/memory.swap.max`, '0');
    }
    // The shell joins the cgroup, then becomes node, which fills its memory until it is killed.
    const script = `echo $$ > ${dir}/cgroup.procs && exec "$0" -e "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1));"`;
    const child = spawn('sh', ['-c', script, process.execPath], { stdio: 'ignore' });
    return await new Promise<string | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
  } finally {
    rmdirSync(dir);
  }
}

/** Why a network namespace with a veth pair cannot be made (unshare -n, ip, root), or null. */
export const netnsMissing: string | null = (() => {
  const r = spawnSync('unshare', ['-n', 'ip', 'link', 'add', 'probe0', 'type', 'veth', 'peer', 'name', 'probe1'], { encoding: 'utf8' });
  return r.status === 0
    ? null
    : `cannot make a veth pair in a network namespace of its own (unshare -n, ip from iproute2, root): ${(r.stderr || r.error?.message || '').trim()}`;
})();

export interface Netns {
  /** The pid of the namespace's holder: `--path.procfs=/proc/<pid>` shows node_exporter its interfaces. */
  pid: number;
  /** Sets the far end of the pair down: what is sent to it is dropped (`hp0`'s transmit drops). */
  peerDown(): void;
}

/**
 * A network namespace of the test's own with a veth pair `hp0` (10.9.0.1) ↔ `hp1` (10.9.0.2),
 * both up, and traffic on it: UDP datagrams from 10.9.0.1 to 10.9.0.2, 50 a second, from a node
 * process in the namespace. Everything ends with the test.
 */
export async function netns(t: ExecutionContext): Promise<Netns> {
  const setup = [
    'ip link set lo up',
    'ip link add hp0 type veth peer name hp1',
    'ip addr add 10.9.0.1/24 dev hp0',
    'ip addr add 10.9.0.2/24 dev hp1',
    'ip link set hp0 up',
    'ip link set hp1 up',
    // 10.9.0.2 is local to the namespace: route the datagrams out of hp0 to hp1's address as a neighbour.
    'ip neigh replace 10.9.0.3 lladdr 02:00:00:00:00:03 dev hp0 nud permanent',
    'exec sleep 100000',
  ].join(' && ');
  const holder = spawn('unshare', ['-n', '--fork', '--kill-child', 'sh', '-c', setup], { stdio: 'ignore' });
  const stop = (c: ChildProcess) => (c.exitCode === null && c.signalCode === null ? c.kill('SIGKILL') : undefined);
  t.teardown(() => stop(holder));
  const pid = await waitFor(
    'the network namespace',
    async () => {
      const children = readFileSync(`/proc/${holder.pid}/task/${holder.pid}/children`, 'utf8').trim();
      if (children === '') return null;
      const inner = Number(children.split(/\s+/)[0]);
      return readFileSync(`/proc/${inner}/cmdline`, 'utf8').startsWith('sleep') ? inner : null;
    },
    10_000,
    50,
  );
  const sender = spawn(
    'nsenter',
    [
      `--net=/proc/${pid}/ns/net`,
      process.execPath,
      '-e',
      "const s = require('node:dgram').createSocket('udp4'); setInterval(() => s.send(Buffer.alloc(64), 9, '10.9.0.3', () => {}), 20);",
    ],
    { stdio: 'ignore' },
  );
  t.teardown(() => stop(sender));
  return {
    pid,
    peerDown() {
      const r = spawnSync('nsenter', [`--net=/proc/${pid}/ns/net`, 'ip', 'link', 'set', 'hp1', 'down'], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`ip link set hp1 down: ${r.stderr}`);
    },
  };
}

/** Why a loop device cannot be attached (losetup, root), or null. */
export const loopMissing: string | null = (() => {
  if (process.getuid?.() !== 0) return 'not root: attaching a loop device needs root';
  const r = spawnSync('losetup', ['-f'], { encoding: 'utf8' });
  return r.status === 0 ? null : `no free loop device (losetup -f): ${(r.stderr || r.error?.message || '').trim()}`;
})();

export interface LoopDisk {
  /** Its name in /proc/diskstats (`loop3`). */
  device: string;
  /** Keeps it busy with `writers` direct writes of 1 MiB in a loop until `stop()`. */
  busy(writers: number): void;
  stop(): Promise<void>;
}

/** A loop device over a 64 MiB file in /dev/shm, detached (and its writers stopped) after the test. */
export function loopDisk(t: ExecutionContext): LoopDisk {
  const file = `/dev/shm/oncall-loop-${randomBytes(4).toString('hex')}.img`;
  writeFileSync(file, '');
  truncateSync(file, 64 * 1024 * 1024);
  const r = spawnSync('losetup', ['-f', '--show', file], { encoding: 'utf8' });
  if (r.status !== 0) {
    rmSync(file, { force: true });
    throw new Error(`losetup: ${r.stderr}`);
  }
  const dev = r.stdout.trim();
  const writers: ChildProcess[] = [];
  // Each writer is a process group of its own (a shell and its dd): killed as a group.
  const stop = async () => {
    await Promise.all(
      writers.splice(0).map((w) =>
        w.exitCode !== null || w.signalCode !== null
          ? Promise.resolve()
          : new Promise<void>((resolve) => {
              w.once('exit', () => resolve());
              process.kill(-w.pid!, 'SIGKILL');
            }),
      ),
    );
  };
  t.teardown(async () => {
    await stop();
    spawnSync('losetup', ['-d', dev]);
    rmSync(file, { force: true });
  });
  return {
    device: dev.replace('/dev/', ''),
    busy(n) {
      for (let i = 0; i < n; i++)
        writers.push(
          spawn('sh', ['-c', `while :; do dd if=/dev/zero of=${dev} bs=1M count=64 oflag=direct status=none; done`], { stdio: 'ignore', detached: true }),
        );
    },
    stop,
  };
}
