import { execFile } from 'node:child_process';
import type { Settings } from './settings.ts';

/** Running the `git` command: a small environment, no prompts, the token as config, a deadline. */

/** Variables of the service's environment git may see (proxies, ssh agent); nothing else. */
const PASSED_ENV = [
  'PATH',
  'HOME',
  'TMPDIR',
  'SSH_AUTH_SOCK',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'GIT_SSL_CAINFO',
];

export /** A failure whose message is fit for a person (already scrubbed of the token). */
class GitProblem extends Error {}

export function secretsOf(s: Settings): string[] {
  if (s.token === undefined) return [];
  const header = Buffer.from(`${s.username ?? 'x-access-token'}:${s.token}`, 'utf8').toString('base64');
  return [header, s.token].filter((x) => x.length >= 4);
}

export function scrub(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join('[redacted]');
  return out;
}

/** The environment git runs with: a small selection of ours, no prompts, and the token as config. */
export function gitEnv(s: Settings): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const k of PASSED_ENV) if (process.env[k] !== undefined) env[k] = process.env[k];
  Object.assign(env, {
    LANG: 'C',
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '/bin/false',
    SSH_ASKPASS: '/bin/false',
    GIT_SSH_COMMAND: 'ssh -o BatchMode=yes',
    GIT_OPTIONAL_LOCKS: '0',
  });
  if (s.token !== undefined) {
    // Config through the environment (git >= 2.31): never on the command line, where other users
    // of the machine could read it in the process list.
    env.GIT_CONFIG_COUNT = '1';
    env.GIT_CONFIG_KEY_0 = 'http.extraHeader';
    env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${Buffer.from(`${s.username ?? 'x-access-token'}:${s.token}`, 'utf8').toString('base64')}`;
  }
  return env;
}

export /** Runs git once, within the call's deadline and signal; a failure becomes a GitProblem. */
function runGit(
  args: string[],
  o: { cwd?: string; env: NodeJS.ProcessEnv; deadline: number; timeoutS: number; signal?: AbortSignal; secrets: string[]; maxBytes?: number },
): Promise<{ out: Buffer; truncated: boolean }> {
  const left = o.deadline - Date.now();
  if (left <= 0) return Promise.reject(new GitProblem(`git did not finish within ${o.timeoutS} s`));
  if (o.signal?.aborted) return Promise.reject(new GitProblem('cut off by the host'));
  const maxBuffer = o.maxBytes ?? 4 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args,
      { cwd: o.cwd, env: o.env, encoding: 'buffer', timeout: left, killSignal: 'SIGKILL', maxBuffer, signal: o.signal, windowsHide: true },
      (err, stdout, stderr) => {
        if (err === null) return resolve({ out: stdout, truncated: false });
        const e = err as NodeJS.ErrnoException & { killed?: boolean; signal?: string | null };
        if (e.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') return resolve({ out: stdout.subarray(0, maxBuffer), truncated: true });
        if (e.code === 'ENOENT') return reject(new GitProblem('the git command is not installed on the service machine'));
        if (e.name === 'AbortError' || e.code === 'ABORT_ERR') return reject(new GitProblem('cut off by the host'));
        if (e.killed === true || e.signal === 'SIGKILL') return reject(new GitProblem(`git did not finish within ${o.timeoutS} s`));
        reject(new GitProblem(scrub(explain(stderr.toString('utf8')), o.secrets)));
      },
    );
  });
}

/** The first useful line of git's complaint, with a hint for the common ones. */
function explain(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('hint:'));
  const text = lines.find((l) => l.startsWith('fatal:') || l.startsWith('error:')) ?? lines[0] ?? 'git failed without saying why';
  const msg = text.replace(/^(fatal|error):\s*/, '');
  if (/dubious ownership/.test(stderr))
    return `${msg}; the repository belongs to another user: add it to safe.directory in the service user's git configuration`;
  if (/Authentication failed|could not read Username|could not read Password|terminal prompts disabled/i.test(stderr))
    return 'authentication failed; check token (and username) or that the repository exists';
  if (/Permission denied \(publickey/.test(stderr)) return 'ssh authentication failed: the service user has no key the server accepts';
  if (/not a git repository/.test(stderr)) return 'not a git repository';
  return msg.length > 500 ? `${msg.slice(0, 500)}…` : msg;
}
