import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ConnectorContext } from '../../../host/plugins/contract.ts';
import { GitProblem, gitEnv, runGit, secretsOf } from './run.ts';
import { DEFAULT_TIMEOUT_S, type Settings } from './settings.ts';

/** One repository opened for one call: a local folder read in place, or a shallow bare clone. */

const MAX_TREE_BYTES = 8 * 1024 * 1024;

export /** What one call works on: the repository folder, the resolved commit and how to run git. */
interface Repo {
  dir: string;
  commit: string;
  branch: string | null;
  /** Where the repository is, for messages: the path or the URL (never with credentials). */
  where: string;
  /** True for a clone cut short (`--depth 1` or `--shallow-since`): its oldest commits have no parents here. */
  shallow: boolean;
  git(args: string[], maxBytes?: number): Promise<{ out: Buffer; truncated: boolean }>;
}

/** How much history a clone needs: one commit (the default), or every commit since a moment. */
export interface OpenOptions {
  /** ISO 8601: a clone URL is cloned `--shallow-since` this moment (by committer date). */
  since?: string;
}

export /** A clone asked for history since a moment found no commit of the branch that recent. */
class NoCommitsSince extends GitProblem {}

/** git's words (the server's) when `--shallow-since` selects no commit at all. */
const NO_COMMITS_SELECTED = /no commits selected for shallow requests/;

/** Opens the repository of the settings; `use` runs with it and the clone is always removed. */
export async function withRepo<T>(ctx: ConnectorContext, use: (repo: Repo) => Promise<T>, opts: OpenOptions = {}): Promise<T> {
  const s = ctx.settings as unknown as Settings;
  const secrets = secretsOf(s);
  const timeoutS = s.timeout_s ?? DEFAULT_TIMEOUT_S;
  const deadline = Date.now() + Math.min(timeoutS * 1000, ctx.timeoutMs ?? Number.POSITIVE_INFINITY);
  const env = gitEnv(s);
  const base = { env, deadline, timeoutS, signal: ctx.signal, secrets };
  let dir: string;
  let clone: string | null = null;
  let where: string;
  if (s.url !== undefined) {
    if (s.token !== undefined && !s.url.startsWith('https://')) throw new GitProblem('a token is only sent over https://; use an https clone URL');
    where = s.url;
    clone = await mkdtemp(path.join(tmpdir(), 'oncall-git-'));
    dir = path.join(clone, 'repo.git');
  } else if (s.path !== undefined) {
    where = s.path;
    const st = await stat(s.path).catch(() => null);
    if (st === null) throw new GitProblem(`no folder ${s.path} on the service machine`);
    if (!st.isDirectory()) throw new GitProblem(`${s.path} is not a folder`);
    dir = s.path;
  } else throw new GitProblem('give path or url');
  try {
    if (clone !== null) dir = await cloneInto(clone, s.url!, s.branch, opts.since, base);
    const git = (args: string[], maxBytes?: number) => runGit(['-C', dir, ...args], { ...base, maxBytes });
    const candidates = s.branch === undefined ? ['HEAD'] : [`refs/heads/${s.branch}`, `refs/remotes/origin/${s.branch}`];
    let commit: string | null = null;
    for (const rev of candidates) {
      const r = await git(['rev-parse', '--verify', '--quiet', '--end-of-options', `${rev}^{commit}`]).catch((e: unknown) => {
        // --quiet: a missing revision fails without a word; anything else is a real problem.
        if (e instanceof GitProblem && e.message === 'git failed without saying why') return null;
        throw e;
      });
      if (r !== null) {
        commit = r.out.toString('utf8').trim();
        break;
      }
    }
    if (commit === null) throw new GitProblem(s.branch === undefined ? `${where} has no commit yet` : `${where} has no branch ${s.branch}`);
    let branch = s.branch ?? null;
    if (branch === null) {
      const head = await git(['symbolic-ref', '--short', '-q', 'HEAD']).catch(() => null);
      branch = head === null ? null : head.out.toString('utf8').trim() || null;
    }
    return await use({ dir, commit, branch, where, shallow: clone !== null && existsSync(path.join(dir, 'shallow')), git });
  } finally {
    if (clone !== null) await rm(clone, { recursive: true, force: true }).catch(() => {});
  }
}

/**
 * Clones `url` bare into a new folder of `tmp` and answers that folder: one commit, or with
 * `since` every commit of the branch since then. A server that cannot cut history by date (a
 * dumb http server, an old git) is cloned whole instead; one that finds no commit that recent
 * throws {@link NoCommitsSince}.
 */
async function cloneInto(tmp: string, url: string, branch: string | undefined, since: string | undefined, base: Parameters<typeof runGit>[1]): Promise<string> {
  const clone = async (history: string[], name: string): Promise<string> => {
    const into = path.join(tmp, name);
    const args = ['clone', '--bare', ...history, '--single-branch', '--no-tags', '--quiet', ...(branch === undefined ? [] : ['--branch', branch])];
    await runGit([...args, '--', url, into], base);
    return into;
  };
  const cannot = (e: unknown) => (e instanceof GitProblem ? new GitProblem(`cannot clone ${url}: ${e.message}`) : e);
  if (since === undefined) return clone(['--depth', '1'], 'repo.git').catch((e: unknown) => Promise.reject(cannot(e)));
  try {
    return await clone([`--shallow-since=${since}`], 'repo.git');
  } catch (e) {
    if (!(e instanceof GitProblem)) throw e;
    if (NO_COMMITS_SELECTED.test(e.message)) throw new NoCommitsSince(`${url} has no commit since ${since}`);
    if (!/shallow|deepen/i.test(e.message)) throw cannot(e);
    return clone([], 'full.git').catch((e2: unknown) => Promise.reject(cannot(e2)));
  }
}

/** A path inside the repository: relative, no `..`, no empty or `.` segment. */
export function repoPath(p: string): string | null {
  const clean = p
    .trim()
    .replace(/^\.?\/+/, '')
    .replace(/\/+$/, '');
  if (clean === '' || clean.length > 1000 || clean.includes('\0')) return null;
  if (clean.split('/').some((seg) => seg === '' || seg === '.' || seg === '..')) return null;
  return clean;
}

export interface TreeEntry {
  mode: string;
  type: string;
  oid: string;
  size: number | null;
  path: string;
}

/** The tree entry at a path of the commit, or null when there is none. */
export async function entryAt(repo: Repo, p: string): Promise<TreeEntry | null> {
  const { out } = await repo.git(['ls-tree', '-z', '-l', '--full-tree', repo.commit, '--', p]);
  for (const rec of out.toString('utf8').split('\0')) {
    const m = /^(\d+) (\w+) ([0-9a-f]+)\s+(-|\d+)\t(.*)$/s.exec(rec);
    if (m !== null && m[5] === p) return { mode: m[1]!, type: m[2]!, oid: m[3]!, size: m[4] === '-' ? null : Number(m[4]), path: m[5]! };
  }
  return null;
}

/** A committed file's text (null when binary), read up to `cap` bytes. */
export async function readBlob(repo: Repo, e: TreeEntry, cap: number): Promise<{ text: string | null; truncated: boolean }> {
  const { out, truncated } = await repo.git(['cat-file', 'blob', e.oid], cap);
  if (out.includes(0)) return { text: null, truncated };
  return { text: out.toString('utf8'), truncated };
}

/** Every file path of the commit (at most MAX_TREE_BYTES of names). */
export async function listFiles(repo: Repo): Promise<{ files: string[]; truncated: boolean }> {
  const { out, truncated } = await repo.git(['ls-tree', '-r', '-z', '--name-only', '--full-tree', repo.commit], MAX_TREE_BYTES);
  const files = out
    .toString('utf8')
    .split('\0')
    .filter((f) => f !== '');
  if (truncated) files.pop();
  return { files, truncated };
}
