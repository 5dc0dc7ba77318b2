import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';

/** One commit of a throwaway history: when (author and committer date), by whom, what it writes. */
export interface PlannedCommit {
  at: string;
  author: string;
  email: string;
  subject: string;
  files: Record<string, string>;
}

/**
 * A throwaway repository (branch main) with real commits made by the git command, each dated
 * with GIT_AUTHOR_DATE and GIT_COMMITTER_DATE; removed when the test ends. Answers the folder and
 * the commits' shas in the order given.
 */
export function makeHistory(t: ExecutionContext, commits: PlannedCommit[]): { dir: string; shas: string[] } {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-git-history-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const git = (args: string[], env: Record<string, string> = {}) =>
    execFileSync('git', ['-c', 'commit.gpgsign=false', ...args], { cwd: dir, env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', ...env } })
      .toString()
      .trim();
  git(['init', '-q', '-b', 'main']);
  const shas: string[] = [];
  for (const c of commits) {
    for (const [p, text] of Object.entries(c.files)) {
      mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
      writeFileSync(path.join(dir, p), text);
    }
    git(['add', '-A']);
    git(['-c', `user.name=${c.author}`, '-c', `user.email=${c.email}`, 'commit', '-q', '-m', c.subject], {
      GIT_AUTHOR_DATE: c.at,
      GIT_COMMITTER_DATE: c.at,
    });
    shas.push(git(['rev-parse', 'HEAD']));
  }
  return { dir, shas };
}
