import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ConnectorChangesRequest, ConnectorChangesResult, ConnectorContext, TextLibrary } from '../../../host/plugins/contract.ts';
import { NoCommitsSince, repoPath, withRepo, type Repo } from './repo.ts';
import { GitProblem, scrub, secretsOf } from './run.ts';
import type { Settings } from './settings.ts';

/**
 * The `changes` capability: the commits of the branch in a window, newest first, read with
 * `git log` (by committer date). Authors are names only: a committer's e-mail address is personal
 * data a diagnosis does not need. See README.md.
 */

/** Commits answered when the request names no limit. */
export const DEFAULT_LIMIT = 200;
/** The most commits one call answers. */
export const MAX_LIMIT = 1000;
const MAX_SUBJECT = 300;
const MAX_AUTHOR = 200;
/** How often a shallow clone is deepened to learn what its oldest commit changed. */
const MAX_DEEPEN = 3;

type CommitRow = NonNullable<ConnectorChangesResult['commits']>[number];

/** A moment as git reads it: ISO 8601, whole seconds, UTC (git's own parser drops the rest anyway). */
const gitTime = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/** Answers the commits of the branch between `since` and `until` (both inclusive), newest first. */
export async function changesOf(ctx: ConnectorContext, request: ConnectorChangesRequest): Promise<ConnectorChangesResult> {
  const secrets = secretsOf(ctx.settings as unknown as Settings);
  const since = Date.parse(request.since);
  const until = Date.parse(request.until);
  if (Number.isNaN(since) || Number.isNaN(until)) return { ok: false, problem: 'since and until must be ISO 8601 times' };
  if (until < since) return { ok: false, problem: 'until is before since' };
  const limit = request.limit ?? DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) return { ok: false, problem: `limit must be a whole number from 1 to ${MAX_LIMIT}` };
  const whole = request.path === undefined || request.path.trim() === '' || request.path.trim() === '.';
  const folder = whole ? null : repoPath(request.path!);
  if (!whole && folder === null) return { ok: false, problem: 'path must be a folder inside the repository, such as services/orders' };
  try {
    return await withRepo(
      ctx,
      async (repo) => {
        // A shallow clone's oldest commits have no parent here, so git takes each for one that
        // added every file (or, when it removed the folder, for one that never touched it): with
        // a folder asked, deepen until no such commit lies in the window.
        for (let i = 0; folder !== null && repo.shallow && i < MAX_DEEPEN && (await boundaryInWindow(repo, since, until)); i++)
          await repo.git(['fetch', '--quiet', '--no-tags', '--deepen=1', 'origin', repo.branch === null ? 'HEAD' : `refs/heads/${repo.branch}`]);
        const commits = await logWindow(repo, since, until, folder, limit, secrets, ctx.lib.text.cut);
        ctx.log.info('git read the commits of a window', { commit: repo.commit, since: gitTime(since), until: gitTime(until), found: commits.length });
        return { ok: true, problem: null, commits };
      },
      { since: gitTime(since) },
    );
  } catch (e) {
    if (e instanceof NoCommitsSince) return { ok: true, problem: null, commits: [] };
    if (!(e instanceof GitProblem)) throw e;
    return { ok: false, problem: scrub(e.message, secrets) };
  }
}

/** `git log` of the window on the resolved commit, exact to the millisecond, newest first. */
async function logWindow(
  repo: Repo,
  since: number,
  until: number,
  folder: string | null,
  limit: number,
  secrets: string[],
  cut: TextLibrary['cut'],
): Promise<CommitRow[]> {
  const { out, truncated } = await repo.git([
    'log',
    '-z',
    '--format=%H%x1f%cI%x1f%aN%x1f%s',
    `--since=${gitTime(since)}`,
    `--until=${gitTime(until)}`,
    `--max-count=${limit}`,
    '--end-of-options',
    repo.commit,
    '--',
    ...(folder === null ? [] : [folder]),
  ]);
  const records = out.toString('utf8').split('\0');
  if (truncated) records.pop();
  const commits: CommitRow[] = [];
  for (const rec of records) {
    const [sha, at, author, ...subject] = rec.split('\x1f');
    const t = Date.parse(at ?? '');
    if (sha === undefined || !/^[0-9a-f]{40,64}$/.test(sha) || Number.isNaN(t) || t < since || t > until) continue;
    commits.push({
      sha,
      at: new Date(t).toISOString(),
      author: cut(scrub(author ?? '', secrets), MAX_AUTHOR),
      subject: cut(scrub(subject.join('\x1f'), secrets), MAX_SUBJECT),
    });
  }
  // git walks the graph; a merged branch's older commits can come after newer ones.
  return commits.sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
}

/** Whether a boundary commit of the shallow clone (listed in its `shallow` file) was committed in the window. */
async function boundaryInWindow(repo: Repo, since: number, until: number): Promise<boolean> {
  const text = await readFile(path.join(repo.dir, 'shallow'), 'utf8').catch(() => '');
  const boundary = text.split('\n').filter((l) => /^[0-9a-f]{40,64}$/.test(l));
  if (boundary.length === 0) return false;
  const { out } = await repo.git(['show', '-s', '--format=%ct', '--end-of-options', ...boundary]);
  return out
    .toString('utf8')
    .split('\n')
    .filter((l) => l !== '')
    .some((l) => Number(l) * 1000 >= since && Number(l) * 1000 <= until);
}
