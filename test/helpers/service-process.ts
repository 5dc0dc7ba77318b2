import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import { waitFor } from './wait.ts';
import { listeningPort } from './listening.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface SpawnedHost {
  child: ChildProcess;
  /** The last 20,000 characters it wrote on stdout and stderr. */
  output(): string;
  /** What it wrote on stderr alone (the one-line start problems). */
  stderr(): string;
  exited: Promise<number | null>;
}

/**
 * Runs `command args` (by default `node host/main.ts`) in the repository with this process's
 * environment minus every SERVICE_* and TEST_* variable, plus `serviceEnv`; killed after the test
 * if still running.
 */
export function spawnHost(
  t: ExecutionContext,
  serviceEnv: Record<string, string | undefined>,
  command = process.execPath,
  args = ['host/main.ts'],
): SpawnedHost {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SERVICE_') && !k.startsWith('TEST_')) env[k] = v;
  for (const [k, v] of Object.entries(serviceEnv)) if (v !== undefined) env[k] = v;
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
    err = (err + d.toString()).slice(-20_000);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { child, output: () => out, stderr: () => err, exited };
}

export interface ServiceProcess extends SpawnedHost {
  /** http://127.0.0.1:<port it chose> */
  base: string;
  /** SIGTERM, and its exit code. */
  stop(): Promise<number | null>;
}

/** One `node host/main.ts` with exactly these SERVICE_* variables, on a loopback port it chooses, once it listens. */
export async function startServiceProcess(t: ExecutionContext, serviceEnv: Record<string, string | undefined>): Promise<ServiceProcess> {
  const host = spawnHost(t, { SERVICE_PORT: '0', SERVICE_HOST: '127.0.0.1', SERVICE_LOG_LEVEL: 'warn', ...serviceEnv });
  const port = await waitFor(
    'the service to listen',
    async () => {
      if (host.child.exitCode !== null) throw new Error(`exited ${host.child.exitCode}:\n${host.output()}`);
      return listeningPort(host.output())?.toString() ?? null;
    },
    60_000,
    50,
  );
  return {
    ...host,
    base: `http://127.0.0.1:${port}`,
    stop: async () => {
      host.child.kill('SIGTERM');
      return host.exited;
    },
  };
}
