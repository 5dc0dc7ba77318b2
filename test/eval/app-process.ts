// The eval's small services as processes (test/eval/app.ts): started, stopped, restarted and
// steered by the harness.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { running } from '../bench/common.ts';
import type { Teardowns } from '../helpers/daemon.ts';
import { onFreePort } from './ports.ts';

const APP = fileURLToPath(new URL('./app.ts', import.meta.url));

/** What app.ts can be told at run time (`POST /control`). */
export interface AppMode {
  error_ratio?: number;
  latency_s?: number;
  health_status?: number;
  health_delay_s?: number;
}

/** One service's process on a loopback port found at its first start and kept, so Prometheus's target stays put across restarts. */
export class AppProcess {
  readonly name: string;
  #port: number | null = null;
  /** The JSON file it reads its behaviour from at start (a file of the repository's working copy), if any. */
  configFile: string | null;
  #child: ChildProcess | null = null;
  #loop: NodeJS.Timeout | null = null;
  #looping = false;

  constructor(t: Teardowns, name: string, configFile: string | null = null) {
    this.name = name;
    this.configFile = configFile;
    t.teardown(() => this.stop());
  }

  get port(): number {
    if (this.#port === null) throw new Error(`${this.name} has not started yet`);
    return this.#port;
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts the process (on a new port the first time) and resolves once it listens (10 s at most). */
  async start(): Promise<void> {
    if (this.#port === null) this.#port = await onFreePort((port) => this.#start(port));
    else await this.#start(this.#port);
  }

  async #start(port: number): Promise<void> {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, EVAL_APP_NAME: this.name, EVAL_APP_PORT: String(port) };
    if (this.configFile !== null) env.EVAL_APP_CONFIG = this.configFile;
    const child = spawn(process.execPath, [APP], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    this.#child = child;
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.once('exit', () => running.delete(child));
    const deadline = Date.now() + 10_000;
    while (!out.includes('listening on')) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${this.name} exited at start: ${out}`);
      if (Date.now() > deadline) throw new Error(`${this.name} did not listen within 10 s: ${out}`);
      await Promise.race([gone, new Promise((r) => setTimeout(r, 25))]);
    }
  }

  /** Stops the process (`signal`, SIGKILL after 3 s) and any crash loop. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    this.#looping = false;
    if (this.#loop !== null) clearTimeout(this.#loop);
    this.#loop = null;
    const child = this.#child;
    this.#child = null;
    if (child === null || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await gone;
    clearTimeout(timer);
  }

  /** A deploy: the process stopped and started again (reading its config file anew). */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /**
   * A crash loop as a supervisor makes one (systemd's Restart=always with RestartSec): the process
   * runs `upMs`, dies (SIGKILL), and is started again `downMs` later, until stopped.
   */
  crashLoop(upMs: number, downMs: number): void {
    this.#looping = true;
    const cycle = () => {
      if (!this.#looping) return;
      this.#loop = setTimeout(() => {
        this.#child?.kill('SIGKILL');
        this.#loop = setTimeout(() => {
          if (this.#looping) this.start().then(cycle, cycle);
        }, downMs);
      }, upMs);
    };
    cycle();
  }

  /** Changes its behaviour at run time. */
  async control(mode: AppMode): Promise<void> {
    const r = await fetch(`${this.base}/control`, { method: 'POST', body: JSON.stringify(mode) });
    if (!r.ok) throw new Error(`${this.name}: POST /control answered ${r.status}`);
  }
}
