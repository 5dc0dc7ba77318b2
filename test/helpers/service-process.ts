import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import { waitFor } from './wait.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServiceProcess {
  /** http://127.0.0.1:<port it chose> */
  base: string;
  child: ChildProcess;
  output(): string;
  /** SIGTERM, and its exit code. */
  stop(): Promise<number | null>;
}

/**
 * One `node host/main.ts` with exactly these SERVICE_* variables (on a port it chooses), once it
 * listens; killed after the test if still running.
 */
export async function startServiceProcess(t: ExecutionContext, serviceEnv: Record<string, string | undefined>): Promise<ServiceProcess> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SERVICE_') && !k.startsWith('TEST_')) env[k] = v;
  for (const [k, v] of Object.entries({ SERVICE_PORT: '0', SERVICE_HOST: '127.0.0.1', SERVICE_LOG_LEVEL: 'warn', ...serviceEnv }))
    if (v !== undefined) env[k] = v;
  const child = spawn(process.execPath, ['host/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  const port = await waitFor(
    'the service to listen',
    async () => {
      if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}:\n${out}`);
      return /Console and API on http:\/\/localhost:(\d+)/.exec(out)?.[1] ?? null;
    },
    60_000,
    50,
  );
  return {
    base: `http://127.0.0.1:${port}`,
    child,
    output: () => out,
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
