// A real git repository of the eval: a bare remote (what the service's `git` connector reads and
// pushes reverts to) and a working copy the harness commits to and pushes from, as a developer would.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export class Repo {
  /** The bare remote: the `git` connector's `path`. */
  readonly remote: string;
  /** The working copy: apps read their "deployed" config from its files. */
  readonly work: string;

  private constructor(remote: string, work: string) {
    this.remote = remote;
    this.work = work;
  }

  /**
   * A new remote `<dir>/<name>.git` and its working copy `<dir>/<name>`, with a first commit of
   * `files` dated `at` (long enough before the faults that no check counts it as a recent change).
   */
  static create(dir: string, name: string, files: Record<string, string>, at: Date): Repo {
    const repo = new Repo(path.join(dir, `${name}.git`), path.join(dir, name));
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', repo.remote], { env: gitEnv() });
    mkdirSync(repo.work, { recursive: true });
    repo.#git(['init', '-q', '-b', 'main']);
    repo.#git(['remote', 'add', 'origin', repo.remote]);
    repo.commit(files, 'Initial services layout', { name: 'Platform Team', email: 'platform@bank.example' }, at);
    return repo;
  }

  /** The working copy's path of `file`. */
  file(file: string): string {
    return path.join(this.work, file);
  }

  /** Writes `files`, commits them as `author` (now, or `at`) and pushes to the remote's main: answers the sha. */
  commit(files: Record<string, string>, subject: string, author: { name: string; email: string }, at?: Date): string {
    for (const [p, text] of Object.entries(files)) {
      mkdirSync(path.dirname(this.file(p)), { recursive: true });
      writeFileSync(this.file(p), text);
    }
    const dated: Record<string, string> = at === undefined ? {} : { GIT_AUTHOR_DATE: at.toISOString(), GIT_COMMITTER_DATE: at.toISOString() };
    this.#git(['add', '-A']);
    this.#git(['-c', `user.name=${author.name}`, '-c', `user.email=${author.email}`, 'commit', '-q', '-m', subject], dated);
    this.#git(['push', '-q', 'origin', 'main']);
    return this.#git(['rev-parse', 'HEAD']);
  }

  #git(args: string[], env: Record<string, string> = {}): string {
    return execFileSync('git', ['-c', 'commit.gpgsign=false', '-c', 'core.hooksPath=/dev/null', ...args], { cwd: this.work, env: { ...gitEnv(), ...env } })
      .toString()
      .trim();
  }
}

/** The machine's git configuration left out, so a developer's settings do not change what the eval commits. */
function gitEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LANG: 'C' };
}
