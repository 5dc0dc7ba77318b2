import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ActionRequest, ActionResult, ConnectorContext } from '../../../host/plugins/contract.ts';
import { repoPath } from './repo.ts';
import { GitProblem, scrub, secretsOf } from './run.ts';
import type { Settings } from './settings.ts';
import { cloneWorkTree, remoteTip, withSession, type Git, type Session } from './worktree.ts';

/**
 * The `revert` action: `git revert` of one commit on the tip of the default branch, in a
 * throwaway clone, pushed to the branch `oncall/revert-<sha12>` of the remote and never to the
 * default branch. `rehearse` makes the same revert without pushing and says whether it applies
 * cleanly; `act` pushes it (a branch already there with the revert is success: a retry does
 * nothing twice); `undo` deletes the branch, unless someone moved it since. See README.md.
 */

export const BRANCH_PREFIX = 'oncall/revert-';
const SHA = /^[0-9a-f]{40}$/;
const MAX_FILES_SHOWN = 20;

interface RevertParams {
  sha: string;
  /** A folder (or file) of the repository: only the commit's changes there are reverted. */
  path: string | null;
  branch: string;
}

/** What the revert made in the work tree: the commit, or the files in conflict. */
type Made = { ok: true; commit: string; files: string[] } | { ok: false; problem: string };

export const branchOf = (sha: string): string => `${BRANCH_PREFIX}${sha.slice(0, 12)}`;

function paramsOf(action: ActionRequest): { ok: true; p: RevertParams } | { ok: false; problem: string } {
  const { sha, path: folder } = action.params;
  if (typeof sha !== 'string' || !SHA.test(sha)) return { ok: false, problem: 'sha must be a full commit id: 40 lower-case hexadecimal digits' };
  if (folder !== undefined && (typeof folder !== 'string' || repoPath(folder) === null))
    return { ok: false, problem: 'path must be a folder or file inside the repository, such as services/payments' };
  return { ok: true, p: { sha, path: typeof folder === 'string' ? repoPath(folder) : null, branch: branchOf(sha) } };
}

const short = (sha: string) => sha.slice(0, 12);
const lines = (b: Buffer) =>
  b
    .toString('utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
const listed = (files: string[]) =>
  files.slice(0, MAX_FILES_SHOWN).join(', ') + (files.length > MAX_FILES_SHOWN ? `, and ${files.length - MAX_FILES_SHOWN} more` : '');

/** Runs `use` with a session, turning a GitProblem into `{ok: false, problem}` scrubbed of the token. */
async function guarded(ctx: ConnectorContext, use: (s: Session) => Promise<ActionResult>): Promise<ActionResult> {
  try {
    return await withSession(ctx, use);
  } catch (e) {
    if (!(e instanceof GitProblem)) throw e;
    return { ok: false, problem: scrub(e.message, secretsOf(ctx.settings as unknown as Settings)) };
  }
}

/**
 * Whether the remote's branch already holds a revert of the commit (a commit on it, not on the
 * default branch, saying "This reverts commit <sha>"): the tip it has, or null when there is no
 * such branch. A branch of that name holding something else is a problem.
 */
async function alreadyPushed(s: Session, dir: string, p: RevertParams): Promise<{ tip: string } | null> {
  const tip = await remoteTip(s, p.branch);
  if (tip === null) return null;
  await s.git(['fetch', '--quiet', '--no-tags', 'origin', `+refs/heads/${p.branch}:refs/remotes/origin/${p.branch}`], { cwd: dir });
  const { out } = await s.git(['log', '--format=%B', '-n', '50', `refs/remotes/origin/${p.branch}`, '--not', 'HEAD', '--'], { cwd: dir });
  if (!out.toString('utf8').includes(`This reverts commit ${p.sha}`))
    throw new GitProblem(`${s.where} has a branch ${p.branch} that does not hold a revert of ${short(p.sha)}; left as it is`);
  return { tip };
}

/** Makes the revert commit in the work tree (HEAD = the default branch's tip), or says why it cannot. */
async function makeRevert(git: Git, dir: string, p: RevertParams, action: ActionRequest, branch: string): Promise<Made> {
  const run = (args: string[], maxBytes?: number) => git(args, { cwd: dir, maxBytes });
  const known = await run(['cat-file', '-t', `${p.sha}`]).catch(() => null);
  if (known === null || known.out.toString('utf8').trim() !== 'commit') return { ok: false, problem: `commit ${short(p.sha)} is not in the repository` };
  const base = await run(['merge-base', p.sha, 'HEAD']).catch(() => null);
  if (base === null || base.out.toString('utf8').trim() !== p.sha) return { ok: false, problem: `commit ${short(p.sha)} is not on branch ${branch}` };
  const parents = (await run(['rev-list', '--parents', '-n', '1', p.sha])).out.toString('utf8').trim().split(' ').slice(1);
  if (parents.length === 0) return { ok: false, problem: `commit ${short(p.sha)} is the repository's first commit; there is nothing to revert to` };
  const subject = (await run(['show', '-s', '--format=%s', p.sha])).out.toString('utf8').trim();
  try {
    if (p.path === null) await run(['revert', '--no-commit', ...(parents.length > 1 ? ['-m', '1'] : []), p.sha]);
    else {
      const patch = await run(['diff', '--binary', '--full-index', `${p.sha}^1`, p.sha, '--', p.path], 64 * 1024 * 1024);
      if (patch.out.length === 0) return { ok: false, problem: `commit ${short(p.sha)} changed nothing under ${p.path}` };
      const file = path.join(path.dirname(dir), 'revert.patch');
      await writeFile(file, patch.out);
      await run(['apply', '--index', '--3way', '--reverse', file]);
    }
  } catch (e) {
    if (!(e instanceof GitProblem)) throw e;
    const conflicts = lines((await run(['diff', '--name-only', '--diff-filter=U'])).out);
    if (conflicts.length === 0) throw e;
    return { ok: false, problem: `the revert of ${short(p.sha)} does not apply cleanly on ${branch}: conflicts in ${listed(conflicts)}` };
  }
  const files = lines((await run(['diff', '--cached', '--name-only'])).out);
  if (files.length === 0) return { ok: false, problem: `the revert of ${short(p.sha)} changes nothing on ${branch}: its changes are already undone there` };
  const body = [
    `This reverts commit ${p.sha}${parents.length > 1 ? `, reversing changes made to ${parents[0]}` : ''}.`,
    ...(p.path === null ? [] : [`Only its changes under ${p.path} are reverted.`]),
    `Reverted by the on-call service for episode ${action.episode.id}${action.episode.url === null ? '' : ` (${action.episode.url})`}.`,
  ];
  await run(['commit', '--quiet', '--no-verify', '-m', `Revert "${subject}"`, ...body.flatMap((l) => ['-m', l])]);
  return { ok: true, commit: (await run(['rev-parse', 'HEAD'])).out.toString('utf8').trim(), files };
}

/** Does the revert in a throwaway work tree and says whether it applies cleanly; pushes nothing. */
export function rehearseRevert(ctx: ConnectorContext, action: ActionRequest): Promise<ActionResult> {
  const params = paramsOf(action);
  if (!params.ok) return Promise.resolve({ ok: false, problem: params.problem });
  const { p } = params;
  return guarded(ctx, async (s) => {
    const work = await cloneWorkTree(ctx, s);
    if (work.branch === p.branch) return { ok: false, problem: `the default branch is ${p.branch}; a revert is never pushed to the default branch` };
    const there = await alreadyPushed(s, work.dir, p);
    if (there !== null)
      return { ok: true, problem: null, shown: `${p.branch} already holds the revert of ${short(p.sha)} (at ${short(there.tip)}); act would push nothing` };
    const made = await makeRevert(s.git, work.dir, p, action, work.branch);
    if (!made.ok) return { ok: false, problem: made.problem };
    return {
      ok: true,
      problem: null,
      shown: `the revert of ${short(p.sha)} applies cleanly on ${work.branch} at ${short(work.tip)}: would push ${p.branch} changing ${made.files.length} file${made.files.length === 1 ? '' : 's'}: ${listed(made.files)}`,
    };
  });
}

/** Pushes the revert to `oncall/revert-<sha12>`; a branch already holding it is success. */
export function actRevert(ctx: ConnectorContext, action: ActionRequest): Promise<ActionResult> {
  const params = paramsOf(action);
  if (!params.ok) return Promise.resolve({ ok: false, problem: params.problem });
  const { p } = params;
  return guarded(ctx, async (s) => {
    const work = await cloneWorkTree(ctx, s);
    if (work.branch === p.branch) return { ok: false, problem: `the default branch is ${p.branch}; a revert is never pushed to the default branch` };
    const there = await alreadyPushed(s, work.dir, p);
    if (there !== null)
      return { ok: true, problem: null, shown: `${p.branch} already holds the revert of ${short(p.sha)}`, undo: { branch: p.branch, commit: there.tip } };
    const made = await makeRevert(s.git, work.dir, p, action, work.branch);
    if (!made.ok) return { ok: false, problem: made.problem };
    // An explicit destination of the fixed prefix, never forced: the default branch cannot be reached from here.
    const ref = `refs/heads/${p.branch}`;
    if (!ref.startsWith(`refs/heads/${BRANCH_PREFIX}`) || ref === `refs/heads/${work.branch}`) throw new GitProblem('refusing to push outside oncall/revert-*');
    await s.git(['push', '--quiet', '--no-verify', 'origin', `${made.commit}:${ref}`], { cwd: work.dir });
    return {
      ok: true,
      problem: null,
      shown: `pushed ${p.branch} (${short(made.commit)}) to ${s.where}: the revert of ${short(p.sha)} on ${work.branch}, changing ${listed(made.files)}`,
      undo: { branch: p.branch, commit: made.commit },
    };
  });
}

/** Deletes the branch `act` pushed, unless it moved since (someone built on it); one already gone is done. */
export function undoRevert(ctx: ConnectorContext, action: ActionRequest & { undo: Record<string, unknown> }): Promise<ActionResult> {
  const { branch, commit } = action.undo;
  if (typeof branch !== 'string' || !/^oncall\/revert-[0-9a-f]{12}$/.test(branch))
    return Promise.resolve({ ok: false, problem: `undo.branch must be a branch ${BRANCH_PREFIX}<sha12>` });
  if (typeof commit !== 'string' || !SHA.test(commit)) return Promise.resolve({ ok: false, problem: 'undo.commit must be a full commit id' });
  return guarded(ctx, async (s) => {
    const tip = await remoteTip(s, branch);
    if (tip === null) return { ok: true, problem: null, shown: `${branch} is no longer on ${s.where}; nothing to delete` };
    if (tip !== commit) return { ok: false, problem: `${branch} moved since it was pushed (now ${short(tip)}, pushed ${short(commit)}); left as it is` };
    const bare = path.join(s.tmp, 'empty.git');
    await s.git(['init', '--quiet', '--bare', bare], { cwd: null });
    await s.git(['push', '--quiet', '--no-verify', `--force-with-lease=refs/heads/${branch}:${commit}`, s.remote, `:refs/heads/${branch}`], { cwd: bare });
    return { ok: true, problem: null, shown: `deleted ${branch} (${short(commit)}) from ${s.where}` };
  });
}
