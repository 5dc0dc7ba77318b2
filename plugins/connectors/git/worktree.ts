import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ConnectorContext } from '../../../host/plugins/contract.ts';
import { GitProblem, gitEnv, runGit, secretsOf } from './run.ts';
import { DEFAULT_TIMEOUT_S, type Settings } from './settings.ts';

/**
 * A throwaway clone with a work tree, for the `revert` action: made in a fresh temporary folder
 * from the connector's remote (`url`, or the repository at `path`), never the repository's own
 * work tree, and always removed. Every git command runs as `oncall-service` (author and
 * committer, through the environment), with no hook (`core.hooksPath=/dev/null`) and no signing.
 */

/** The name and address commits of actions carry. */
export const IDENTITY = { name: 'oncall-service', email: 'oncall-service@localhost' } as const;

/** Config for every command: no hook of the clone, the user or the system runs; nothing is signed. */
const SAFE_CONFIG = ['-c', 'core.hooksPath=/dev/null', '-c', 'commit.gpgsign=false', '-c', 'tag.gpgsign=false', '-c', 'core.autocrlf=false'];

/** Runs git in a folder (or, with `cwd: null`, outside any repository). */
export type Git = (args: string[], opts?: { cwd?: string | null; maxBytes?: number }) => Promise<{ out: Buffer; truncated: boolean }>;

/** What an action call works with: the remote, git, and a folder that is removed afterwards. */
export interface Session {
  /** The remote as git is given it: the clone URL or the repository's path. */
  remote: string;
  /** The remote for messages (never with credentials; the settings refuse them in `url`). */
  where: string;
  /** The temporary folder of this call. */
  tmp: string;
  git: Git;
}

/** Opens a session on the connector's remote; `use` runs with it and the folder is always removed. */
export async function withSession<T>(ctx: ConnectorContext, use: (s: Session) => Promise<T>): Promise<T> {
  const s = ctx.settings as unknown as Settings;
  const secrets = secretsOf(s);
  const timeoutS = s.timeout_s ?? DEFAULT_TIMEOUT_S;
  const deadline = Date.now() + Math.min(timeoutS * 1000, ctx.timeoutMs ?? Number.POSITIVE_INFINITY);
  const env: NodeJS.ProcessEnv = {
    ...gitEnv(s),
    GIT_AUTHOR_NAME: IDENTITY.name,
    GIT_AUTHOR_EMAIL: IDENTITY.email,
    GIT_COMMITTER_NAME: IDENTITY.name,
    GIT_COMMITTER_EMAIL: IDENTITY.email,
    GIT_CONFIG_NOSYSTEM: '1',
  };
  let remote: string;
  if (s.url !== undefined) {
    if (s.token !== undefined && !s.url.startsWith('https://')) throw new GitProblem('a token is only sent over https://; use an https clone URL');
    remote = s.url;
  } else if (s.path !== undefined) {
    const st = await stat(s.path).catch(() => null);
    if (st === null) throw new GitProblem(`no folder ${s.path} on the service machine`);
    if (!st.isDirectory()) throw new GitProblem(`${s.path} is not a folder`);
    remote = s.path;
  } else throw new GitProblem('give path or url');
  const tmp = await mkdtemp(path.join(tmpdir(), 'oncall-git-act-'));
  try {
    const git: Git = (args, o = {}) =>
      runGit([...SAFE_CONFIG, ...args], {
        cwd: o.cwd === null ? tmp : (o.cwd ?? tmp),
        env,
        deadline,
        timeoutS,
        signal: ctx.signal,
        secrets,
        maxBytes: o.maxBytes,
      });
    return await use({ remote, where: remote, tmp, git });
  } finally {
    await rm(tmp, { recursive: true, force: true }).catch(() => {});
  }
}

/** The tip of a branch of the remote, or null when it has no such branch. */
export async function remoteTip(session: Session, branch: string): Promise<string | null> {
  const { out } = await session.git(['ls-remote', '--heads', '--', session.remote, `refs/heads/${branch}`], { cwd: null });
  const line = out
    .toString('utf8')
    .split('\n')
    .find((l) => l.endsWith(`\trefs/heads/${branch}`));
  return line === undefined ? null : line.split('\t', 1)[0]!;
}

/** A work tree of the remote's default branch (or the settings' `branch`) in `<tmp>/work`: its folder, branch and tip. */
export async function cloneWorkTree(ctx: ConnectorContext, session: Session): Promise<{ dir: string; branch: string; tip: string }> {
  const s = ctx.settings as unknown as Settings;
  const dir = path.join(session.tmp, 'work');
  await session
    .git(['clone', '--quiet', '--no-tags', '--single-branch', ...(s.branch === undefined ? [] : ['--branch', s.branch]), '--', session.remote, dir])
    .catch((e: unknown) => Promise.reject(e instanceof GitProblem ? new GitProblem(`cannot clone ${session.where}: ${e.message}`) : e));
  const head = await session.git(['symbolic-ref', '--short', '-q', 'HEAD'], { cwd: dir }).catch(() => null);
  const branch = head === null ? '' : head.out.toString('utf8').trim();
  if (branch === '') throw new GitProblem(`${session.where} has no default branch to revert on (its HEAD is detached or it has no commit)`);
  const tip = (await session.git(['rev-parse', 'HEAD'], { cwd: dir })).out.toString('utf8').trim();
  return { dir, branch, tip };
}
