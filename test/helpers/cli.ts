import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RUN = path.join(ROOT, 'bin', 'run.js');

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real CLI in a child process with exactly the SERVICE_* variables given. */
export function oncall(args: string[], env: Record<string, string | undefined> = {}): Promise<Ran> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SERVICE_')));
  const extra = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
  return new Promise((resolve) => {
    execFile(process.execPath, [RUN, ...args], { cwd: ROOT, env: { ...base, ...extra, NO_COLOR: '1' }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

export const json = (r: Ran): any => JSON.parse(r.stdout);
