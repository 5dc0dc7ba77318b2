// The `revert` action of the git connector against real repositories made in the test: a bare
// repository as the remote (and a non-bare one, whose work tree must stay untouched). Through
// the host's helper, as the acting area calls it.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { actionHost, actionRequest, type ActionHost } from '../helpers/connector-actions.ts';

function tmp(t: ExecutionContext, prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const gitIn =
  (dir: string) =>
  (...args: string[]): string =>
    execFileSync('git', ['-c', 'user.name=Dev', '-c', 'user.email=dev@bank.example', '-c', 'commit.gpgsign=false', ...args], {
      cwd: dir,
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
    })
      .toString()
      .trim();

interface Remote {
  /** The remote repository (bare unless asked otherwise). */
  dir: string;
  /** The developer's clone the history was made in. */
  dev: string;
  git: (...args: string[]) => string;
  /** The commits by name. */
  sha: Record<string, string>;
}

/**
 * A remote with branch main: `first` (payments v1, orders v1, README), `bad` (payments v2,
 * orders v2), `docs` (README only); with `later`, also `later` (payments v3, which makes a revert
 * of `bad` conflict). A branch `feature` holds a commit `side` not on main.
 */
function makeRemote(t: ExecutionContext, opts: { later?: boolean; bare?: boolean } = {}): Remote {
  const dev = tmp(t, 'oncall-git-dev-');
  const git = gitIn(dev);
  const put = (p: string, text: string) => {
    mkdirSync(path.dirname(path.join(dev, p)), { recursive: true });
    writeFileSync(path.join(dev, p), text);
  };
  const commit = (msg: string) => (git('add', '-A'), git('commit', '-q', '-m', msg), git('rev-parse', 'HEAD'));
  git('init', '-q', '-b', 'main');
  const sha: Record<string, string> = {};
  put('services/payments/app.txt', 'payments v1\n');
  put('services/orders/app.txt', 'orders v1\n');
  put('README.md', '# shop\n');
  sha.first = commit('first');
  put('services/payments/app.txt', 'payments v2\n');
  put('services/orders/app.txt', 'orders v2\n');
  sha.bad = commit('payments and orders: v2');
  put('README.md', '# shop\n\nNow with docs.\n');
  sha.docs = commit('docs');
  if (opts.later) {
    put('services/payments/app.txt', 'payments v3\n');
    sha.later = commit('payments: v3');
  }
  git('checkout', '-q', '-b', 'feature');
  put('feature.txt', 'side\n');
  sha.side = commit('side');
  git('checkout', '-q', 'main');
  let dir: string;
  if (opts.bare === false) {
    dir = tmp(t, 'oncall-git-remote-work-');
    gitIn(dir)('clone', '-q', dev, '.');
    gitIn(dir)('branch', '-q', 'feature', 'origin/feature');
  } else {
    dir = path.join(tmp(t, 'oncall-git-remote-'), 'remote.git');
    git('init', '-q', '--bare', '-b', 'main', dir);
    git('push', '-q', dir, 'main', 'feature');
  }
  return { dir, dev, git: gitIn(dir), sha };
}

const branchOf = (sha: string) => `oncall/revert-${sha.slice(0, 12)}`;
const revertReq = (sha: string, extra: Record<string, unknown> = {}) => actionRequest('revert', { sha, ...extra }, `ep-1/revert/${sha.slice(0, 12)}`);
const heads = (r: Remote) =>
  r
    .git('for-each-ref', '--format=%(refname:short)', 'refs/heads/')
    .split('\n')
    .filter((l) => l !== '')
    .sort();

/** A host with the connector `repo`; a long timeout, since the tests run many git commands at once. */
async function hostFor(t: ExecutionContext, settings: Record<string, unknown>): Promise<ActionHost> {
  return actionHost(t, { repo: { kind: 'git', settings: { timeout_s: 60, ...settings } } });
}

test.serial('revert: no hook of the user runs in the throwaway clone, and commits are made as oncall-service', async (t) => {
  const r = makeRemote(t);
  const home = tmp(t, 'oncall-git-home-');
  const hooks = path.join(home, 'hooks');
  mkdirSync(hooks);
  const marker = path.join(home, 'hook-ran');
  for (const hook of ['pre-commit', 'post-commit', 'post-checkout', 'reference-transaction', 'pre-push'])
    writeFileSync(path.join(hooks, hook), `#!/bin/sh\necho "${hook} in $(pwd)" >> ${marker}\n`, { mode: 0o755 });
  writeFileSync(path.join(home, '.gitconfig'), `[core]\n\thooksPath = ${hooks}\n[user]\n\tname = Someone Else\n\temail = else@bank.example\n`);
  const saved = process.env.HOME;
  process.env.HOME = home;
  t.teardown(() => {
    process.env.HOME = saved;
  });
  // The hooks are really configured: a commit of this user runs them.
  const probe = path.join(home, 'probe');
  execFileSync('git', ['init', '-q', probe], { env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
  execFileSync('git', ['commit', '-q', '--allow-empty', '-m', 'probe'], { cwd: probe, env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' } });
  t.true(readFileSync(marker, 'utf8').includes('post-commit'));
  rmSync(marker);
  const h = await hostFor(t, { path: r.dir });
  const acted = await h.connectors.act('repo', revertReq(r.sha.bad!));
  process.env.HOME = saved;
  t.like(acted, { ok: true });
  // The remote's own side (receive-pack in the remote repository) may run its hooks: they are the remote's, not the clone's.
  const ran = existsSync(marker)
    ? readFileSync(marker, 'utf8')
        .split('\n')
        .filter((l) => l !== '' && !l.endsWith(` in ${r.dir}`))
    : [];
  t.deepEqual(ran, [], 'no hook ran in the throwaway clone');
  t.is(
    r.git('log', '-1', '--format=%an <%ae> / %cn <%ce>', branchOf(r.sha.bad!)),
    'oncall-service <oncall-service@localhost> / oncall-service <oncall-service@localhost>',
  );
});

test('revert: rehearsal says the revert applies cleanly and pushes nothing', async (t) => {
  const r = makeRemote(t);
  const h = await hostFor(t, { path: r.dir });
  const tip = r.git('rev-parse', 'main');
  const rehearsed = await h.connectors.rehearse('repo', revertReq(r.sha.bad!));
  t.like(rehearsed, {
    ok: true,
    reason: null,
    shown: `the revert of ${r.sha.bad!.slice(0, 12)} applies cleanly on main at ${tip.slice(0, 12)}: would push ${branchOf(r.sha.bad!)} changing 2 files: services/orders/app.txt, services/payments/app.txt`,
  });
  t.deepEqual(heads(r), ['feature', 'main'], 'nothing pushed');
  t.is(r.git('rev-parse', 'main'), tip);
});

test('revert: act pushes oncall/revert-<sha12> on the tip of main, never main; a retry does nothing twice; undo deletes it', async (t) => {
  const r = makeRemote(t);
  const h = await hostFor(t, { path: r.dir });
  const tip = r.git('rev-parse', 'main');
  const branch = branchOf(r.sha.bad!);
  const acted = await h.connectors.act('repo', revertReq(r.sha.bad!));
  t.like(acted, { ok: true, reason: null });
  const pushed = r.git('rev-parse', branch);
  t.deepEqual(acted.undo, { branch, commit: pushed });
  t.regex(acted.shown!, new RegExp(`^pushed ${branch} \\(${pushed.slice(0, 12)}\\) to ${r.dir}: the revert of ${r.sha.bad!.slice(0, 12)} on main`));
  t.deepEqual(heads(r), ['feature', 'main', branch]);
  t.is(r.git('rev-parse', 'main'), tip, 'main is untouched');
  t.is(r.git('rev-parse', `${branch}^`), tip, 'the revert sits on the tip of main');
  t.is(r.git('show', `${branch}:services/payments/app.txt`), 'payments v1');
  t.is(r.git('show', `${branch}:services/orders/app.txt`), 'orders v1');
  t.is(r.git('show', `${branch}:README.md`), '# shop\n\nNow with docs.', 'later commits stay');
  const message = r.git('log', '-1', '--format=%B', branch);
  t.true(message.startsWith('Revert "payments and orders: v2"'));
  t.true(message.includes(`This reverts commit ${r.sha.bad}.`));
  t.true(message.includes('episode ep-1 (https://oncall.bank.example/episodes/ep-1)'));

  const again = await h.connectors.act('repo', revertReq(r.sha.bad!));
  t.like(again, { ok: true, shown: `${branch} already holds the revert of ${r.sha.bad!.slice(0, 12)}` });
  t.deepEqual(again.undo, { branch, commit: pushed });
  t.is(r.git('rev-parse', branch), pushed, 'the branch did not move');
  t.like(await h.connectors.rehearse('repo', revertReq(r.sha.bad!)), { ok: true });

  const undone = await h.connectors.undo('repo', { ...revertReq(r.sha.bad!), undo: acted.undo! });
  t.like(undone, { ok: true, shown: `deleted ${branch} (${pushed.slice(0, 12)}) from ${r.dir}` });
  t.deepEqual(heads(r), ['feature', 'main']);
  t.like(await h.connectors.undo('repo', { ...revertReq(r.sha.bad!), undo: acted.undo! }), {
    ok: true,
    shown: `${branch} is no longer on ${r.dir}; nothing to delete`,
  });
});

test('revert: undo leaves a branch someone built on; a branch of that name holding something else is never taken for it', async (t) => {
  const r = makeRemote(t);
  const h = await hostFor(t, { path: r.dir });
  const branch = branchOf(r.sha.bad!);
  const acted = await h.connectors.act('repo', revertReq(r.sha.bad!));
  t.true(acted.ok);
  // A person adds a commit on the branch.
  const dev = gitIn(r.dev);
  dev('fetch', '-q', r.dir, `${branch}:${branch}`);
  dev('checkout', '-q', branch);
  writeFileSync(path.join(r.dev, 'fix.txt'), 'fix\n');
  dev('add', '-A');
  dev('commit', '-q', '-m', 'follow-up');
  dev('push', '-q', r.dir, branch);
  const moved = r.git('rev-parse', branch);
  const undo = await h.connectors.undo('repo', { ...revertReq(r.sha.bad!), undo: acted.undo! });
  t.like(undo, { ok: false, reason: 'said_no' });
  t.regex(undo.problem!, /moved since it was pushed/);
  t.is(r.git('rev-parse', branch), moved, 'left as it is');

  // A branch of the revert's name that does not hold the revert.
  const other = branchOf(r.sha.docs!);
  r.git('branch', other, r.sha.first!);
  const refused = await h.connectors.act('repo', revertReq(r.sha.docs!));
  t.like(refused, { ok: false, reason: 'said_no' });
  t.regex(refused.problem!, new RegExp(`has a branch ${other} that does not hold a revert`));
  t.is(r.git('rev-parse', other), r.sha.first!);
});

test('revert: a conflict is a failed rehearsal naming the files, and act pushes nothing', async (t) => {
  const r = makeRemote(t, { later: true });
  const h = await hostFor(t, { path: r.dir });
  const rehearsed = await h.connectors.rehearse('repo', revertReq(r.sha.bad!));
  t.like(rehearsed, {
    ok: false,
    reason: 'said_no',
    problem: `the revert of ${r.sha.bad!.slice(0, 12)} does not apply cleanly on main: conflicts in services/payments/app.txt`,
  });
  t.like(await h.connectors.act('repo', revertReq(r.sha.bad!)), { ok: false, problem: rehearsed.problem });
  t.deepEqual(heads(r), ['feature', 'main']);
  // Only the orders folder: that part applies.
  const orders = await h.connectors.act('repo', revertReq(r.sha.bad!, { path: 'services/orders' }));
  t.like(orders, { ok: true });
  const branch = branchOf(r.sha.bad!);
  t.is(r.git('show', `${branch}:services/orders/app.txt`), 'orders v1');
  t.is(r.git('show', `${branch}:services/payments/app.txt`), 'payments v3', 'outside the path nothing is reverted');
  t.true(r.git('log', '-1', '--format=%B', branch).includes('Only its changes under services/orders are reverted.'));
});

test('revert: a commit not on main, unknown, the first, or already undone is refused with the reason', async (t) => {
  const r = makeRemote(t);
  const h = await hostFor(t, { path: r.dir });
  const short = (s: string) => s.slice(0, 12);
  t.like(await h.connectors.rehearse('repo', revertReq(r.sha.side!)), { ok: false, problem: `commit ${short(r.sha.side!)} is not on branch main` });
  t.like(await h.connectors.rehearse('repo', revertReq('0123456789abcdef0123456789abcdef01234567')), {
    ok: false,
    problem: 'commit 0123456789ab is not in the repository',
  });
  t.like(await h.connectors.act('repo', revertReq(r.sha.first!)), {
    ok: false,
    problem: `commit ${short(r.sha.first!)} is the repository's first commit; there is nothing to revert to`,
  });
  t.like(await h.connectors.act('repo', revertReq(r.sha.bad!, { path: 'docs' })), {
    ok: false,
    problem: `commit ${short(r.sha.bad!)} changed nothing under docs`,
  });
  t.like(await h.connectors.act('repo', revertReq('ABC')), { ok: false, reason: 'invalid_params', problem: 'params.sha must match pattern "^[0-9a-f]{40}$"' });
  t.like(await h.connectors.act('repo', revertReq(r.sha.bad!, { path: '../etc' })), { ok: false, reason: 'said_no' });
  // Reverted by hand on main already: the revert would change nothing.
  const dev = gitIn(r.dev);
  dev('revert', '--no-edit', r.sha.bad!);
  dev('push', '-q', r.dir, 'main');
  t.like(await h.connectors.rehearse('repo', revertReq(r.sha.bad!)), {
    ok: false,
    problem: `the revert of ${short(r.sha.bad!)} changes nothing on main: its changes are already undone there`,
  });
  t.deepEqual(heads(r), ['feature', 'main']);
});

test('revert: never pushed to the default branch, even when the default branch has the revert branch name', async (t) => {
  const r = makeRemote(t);
  const branch = branchOf(r.sha.bad!);
  r.git('branch', branch, 'main');
  r.git('symbolic-ref', 'HEAD', `refs/heads/${branch}`);
  const h = await hostFor(t, { path: r.dir });
  const before = r.git('rev-parse', branch);
  const acted = await h.connectors.act('repo', revertReq(r.sha.bad!));
  t.like(acted, { ok: false, problem: `the default branch is ${branch}; a revert is never pushed to the default branch` });
  t.is(r.git('rev-parse', branch), before);
});

test('revert: a non-bare repository as the remote keeps its work tree; a file:// URL works as well', async (t) => {
  const r = makeRemote(t, { bare: false });
  writeFileSync(path.join(r.dir, 'services/payments/app.txt'), 'uncommitted edit\n');
  const status = r.git('status', '--porcelain');
  const head = r.git('rev-parse', 'HEAD');
  const h = await hostFor(t, { path: r.dir });
  t.like(await h.connectors.act('repo', revertReq(r.sha.bad!)), { ok: true });
  t.is(r.git('status', '--porcelain'), status, 'the work tree and index are as they were');
  t.is(readFileSync(path.join(r.dir, 'services/payments/app.txt'), 'utf8'), 'uncommitted edit\n');
  t.is(r.git('rev-parse', 'HEAD'), head);
  t.is(r.git('symbolic-ref', '--short', 'HEAD'), 'main');
  t.is(r.git('show', `${branchOf(r.sha.bad!)}:services/payments/app.txt`), 'payments v1');

  const bare = makeRemote(t);
  const byUrl = await hostFor(t, { url: `file://${bare.dir}` });
  const acted = await byUrl.connectors.act('repo', revertReq(bare.sha.docs!));
  t.like(acted, { ok: true });
  t.is(bare.git('show', `${branchOf(bare.sha.docs!)}:README.md`), '# shop');
  t.like(await byUrl.connectors.undo('repo', { ...revertReq(bare.sha.docs!), undo: acted.undo! }), { ok: true });
  t.deepEqual(heads(bare), ['feature', 'main']);
});

test('revert: a merge commit (a merged pull request) is reverted against its first parent', async (t) => {
  const r = makeRemote(t);
  const dev = gitIn(r.dev);
  dev('checkout', '-q', '-b', 'topic', 'main');
  writeFileSync(path.join(r.dev, 'services/payments/app.txt'), 'payments v4\n');
  dev('commit', '-q', '-am', 'payments: v4');
  dev('checkout', '-q', 'main');
  dev('merge', '-q', '--no-ff', '-m', 'Merge pull request #7 from topic', 'topic');
  const merge = dev('rev-parse', 'HEAD');
  dev('push', '-q', r.dir, 'main');
  const h = await hostFor(t, { path: r.dir });
  const acted = await h.connectors.act('repo', revertReq(merge));
  t.like(acted, { ok: true });
  const branch = branchOf(merge);
  t.is(r.git('show', `${branch}:services/payments/app.txt`), 'payments v2', 'back to what main had before the merge');
  t.true(r.git('log', '-1', '--format=%B', branch).includes(`This reverts commit ${merge}, reversing changes made to ${r.sha.docs}.`));
  const folder = await h.connectors.rehearse('repo', revertReq(merge, { path: 'services/payments' }));
  t.like(folder, { ok: true });
  t.regex(folder.shown!, /already holds the revert/, 'the branch name is per commit: the whole revert is there already');
});
