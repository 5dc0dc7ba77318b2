/**
 * A "host" of a service: Debian's node_exporter run in a mount and PID namespace of its own
 * (`unshare`, root), where a small tmpfs is mounted on /srv, so that its disk can be filled for
 * real from outside through /proc/<pid>/root/srv without touching the machine's own disks.
 * Only the filesystem collector runs, and only /srv is reported: the machine's root filesystem
 * grows and shrinks with whatever else runs here, which would make trends that are not the eval's.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statfsSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { running } from '../bench/common.ts';
import type { Teardowns } from '../helpers/daemon.ts';
import { NODE_EXPORTER_BIN } from './bins.ts';
import { onFreePort } from './ports.ts';

/** Size of each host's /srv. */
const SIZE_MB = 64;

export class NodeHost {
  readonly name: string;
  #port: number | null = null;
  #unshare: ChildProcess | null = null;
  #pid: number | null = null;

  constructor(t: Teardowns, name: string) {
    this.name = name;
    t.teardown(() => this.stop());
  }

  /** `127.0.0.1:<port>`, its scrape target. */
  get target(): string {
    if (this.#port === null) throw new Error(`the host of ${this.name} has not started yet`);
    return `127.0.0.1:${this.#port}`;
  }

  /**
   * Starts the exporter with /srv already `usedRatio` full (written before the exporter starts,
   * so its series begin at that level and stay flat), and resolves once /metrics answers. With
   * `inodes`, /srv has that many inodes (tmpfs `nr_inodes`) instead of the kernel's default.
   */
  async start(usedRatio = 0.4, o: { inodes?: number } = {}): Promise<void> {
    this.#port = await onFreePort((port) => this.#start(port, usedRatio, o.inodes));
  }

  async #start(port: number, usedRatio: number, inodes: number | undefined): Promise<void> {
    const usedMb = Math.round(SIZE_MB * usedRatio);
    const script = [
      `mount -t tmpfs -o size=${SIZE_MB}m${inodes === undefined ? '' : `,nr_inodes=${inodes}`} eval-${this.name} /srv`,
      `dd if=/dev/zero of=/srv/base bs=1M count=${usedMb} status=none`,
      `exec ${NODE_EXPORTER_BIN} --web.listen-address=127.0.0.1:${port} --collector.disable-defaults --collector.filesystem` +
        ` '--collector.filesystem.mount-points-exclude=^/($|dev|proc|sys|run|mnt|tmp)($|/)'` +
        ` '--collector.filesystem.fs-types-exclude=^(ext[234]|xfs|btrfs|overlay|cgroup2?|devpts|proc|sysfs|devtmpfs|mqueue|nsfs)$'`,
    ].join(' && ');
    const child = spawn('unshare', ['--mount', '--pid', '--fork', '--mount-proc', '--propagation', 'private', '--kill-child', 'sh', '-c', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.add(child);
    child.once('exit', () => running.delete(child));
    this.#unshare = child;
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`node_exporter of ${this.name} exited at start: ${out}`);
      const ok = await fetch(`http://127.0.0.1:${port}/metrics`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`node_exporter of ${this.name} did not answer within 15 s: ${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // The exporter's pid as the machine sees it: the child unshare forked (PID 1 inside).
    const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/);
    this.#pid = Number(children[0]);
  }

  /** /srv as this process reaches it, once its mount is there. */
  #srv(): string {
    if (this.#pid === null) throw new Error(`${this.name} is not running`);
    const stat = readFileSync(`/proc/${this.#pid}/mountinfo`, 'utf8');
    if (!stat.includes(' /srv ')) throw new Error(`${this.name}: no /srv mount in its namespace`);
    return `/proc/${this.#pid}/root/srv`;
  }

  /** Fills /srv until `freeRatio` of it is left, from outside the namespace. */
  fill(freeRatio: number): void {
    const dir = this.#srv();
    const base = existsSync(`${dir}/base`) ? statSync(`${dir}/base`).size : 0;
    const want = Math.round(SIZE_MB * 1024 * 1024 * (1 - freeRatio)) - base;
    if (want > 0) writeFileSync(`${dir}/fill`, Buffer.alloc(want));
    else if (existsSync(`${dir}/fill`)) unlinkSync(`${dir}/fill`);
  }

  /** Creates empty files in /srv until less than `freeRatio` of its inodes is free. */
  useInodes(freeRatio: number): void {
    const dir = this.#srv();
    for (let i = 0; ; i++) {
      const s = statfsSync(dir);
      if (s.ffree < s.files * freeRatio) return;
      writeFileSync(`${dir}/inode-${i}`, '');
    }
  }

  /**
   * Remounts /srv read-only (or read-write again) inside the host's namespace: what ext4's
   * `errors=remount-ro` does to a filesystem after an I/O error.
   */
  readOnly(on = true): void {
    if (this.#pid === null) throw new Error(`${this.name} is not running`);
    const r = spawnSync('nsenter', ['-t', String(this.#pid), '-m', 'mount', '-o', `remount,${on ? 'ro' : 'rw'}`, '/srv'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${this.name}: remount ${on ? 'ro' : 'rw'} of /srv failed: ${r.stderr || r.error?.message}`);
  }

  /** The exporter killed (SIGKILL: a crashed exporter), which ends its namespace and its /srv. */
  async stop(): Promise<void> {
    const child = this.#unshare;
    const pid = this.#pid;
    this.#unshare = null;
    this.#pid = null;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // unshare does not pass a signal on to what it runs: the exporter (PID 1 inside) is killed itself.
    if (pid !== null) process.kill(pid, 'SIGKILL');
    else child.kill('SIGKILL');
    await gone;
  }
}
