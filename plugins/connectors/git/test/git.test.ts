// The git connector's own test, beside it: its test, a query and changes against a real
// repository made here with the `git` binary (the connector reads with the same binary, so
// nothing can be recorded). It imports nothing of the host but the contract module, so the
// folder can be copied and tested alone against a checkout of the host. Without a `git` binary
// the tests are skipped with the reason (failed under CI=true). The host-side suites
// (test/connectors/git-*.test.ts) add clones over https, discovery and the revert action.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { connectorContext, loadPluginFolder, testNeeding } from '../../../../host/plugins/contract.ts';
import type { ConnectorPluginWithCapabilities } from '../../../../host/plugins/contract.ts';

const DIR = fileURLToPath(new URL('..', import.meta.url));

const gitMissing = ((): string | null => {
  try {
    execFileSync('git', ['--version'], { stdio: 'pipe' });
    return null;
  } catch (e) {
    return `no git binary on PATH (${(e as Error).message.split('\n', 1)[0]})`;
  }
})();

/** Commits of the repository made below: when, by whom, what each writes. */
const HISTORY = [
  { at: '2026-11-24T08:00:00Z', author: 'Ada', subject: 'orders: first service', files: { 'services/orders/service.yaml': 'name: orders\n' } },
  { at: '2026-11-24T09:00:00Z', author: 'Grace', subject: 'owners', files: { CODEOWNERS: '* @org/platform\n/services/orders/ @org/orders\n' } },
  { at: '2026-11-24T10:00:00Z', author: 'Linus', subject: 'orders: pool of 20', files: { 'services/orders/service.yaml': 'name: orders\npool: 20\n' } },
];

/** A throwaway repository on branch main with HISTORY committed at its dates; removed after the tests. */
function makeRepository(): { dir: string; shas: string[] } {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-git-folder-test-'));
  const git = (args: string[], env: Record<string, string> = {}) =>
    execFileSync('git', ['-c', 'commit.gpgsign=false', ...args], { cwd: dir, env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', ...env } })
      .toString()
      .trim();
  git(['init', '-q', '-b', 'main']);
  const shas: string[] = [];
  for (const c of HISTORY) {
    for (const [p, text] of Object.entries(c.files)) {
      mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
      writeFileSync(path.join(dir, p), text);
    }
    git(['add', '-A']);
    git(['-c', `user.name=${c.author}`, '-c', `user.email=${c.author.toLowerCase()}@bank.example`, 'commit', '-q', '-m', c.subject], {
      GIT_AUTHOR_DATE: c.at,
      GIT_COMMITTER_DATE: c.at,
    });
    shas.push(git(['rev-parse', 'HEAD']));
  }
  return { dir, shas };
}

const repo = gitMissing === null ? makeRepository() : null;
test.after.always(() => repo !== null && rmSync(repo.dir, { recursive: true, force: true }));

const plugin = async () => (await loadPluginFolder(DIR)).plugin as ConnectorPluginWithCapabilities;

testNeeding(test, gitMissing, 'test reads the branch, its commit and the CODEOWNERS file; a folder that is no repository is a problem', async (t) => {
  const git = await plugin();
  t.deepEqual(await git.test(connectorContext({ path: repo!.dir })), {
    ok: true,
    problem: null,
    found: { commit: repo!.shas[2], branch: 'main', committed_at: '2026-11-24T10:00:00+00:00', codeowners: 'CODEOWNERS', codeowners_rules: 2 },
  });
  const empty = mkdtempSync(path.join(tmpdir(), 'oncall-git-folder-test-empty-'));
  t.teardown(() => rmSync(empty, { recursive: true, force: true }));
  const r = await git.test(connectorContext({ path: empty }));
  t.false(r.ok);
  t.regex(String(r.problem), /not a git repository/);
  t.like(await git.test(connectorContext({ path: repo!.dir, branch: 'release' })), { ok: false, problem: `${repo!.dir} has no branch release` });
});

testNeeding(test, gitMissing, 'changes answers the commits of a window newest first, by author name only, narrowed to a path', async (t) => {
  const git = await plugin();
  const [first, owners, pool] = repo!.shas;
  const window = { since: '2026-11-24T08:30:00Z', until: '2026-11-24T10:30:00Z' };
  t.deepEqual(await git.changes!(connectorContext({ path: repo!.dir }), window), {
    ok: true,
    problem: null,
    commits: [
      { sha: pool!, at: '2026-11-24T10:00:00.000Z', author: 'Linus', subject: 'orders: pool of 20' },
      { sha: owners!, at: '2026-11-24T09:00:00.000Z', author: 'Grace', subject: 'owners' },
    ],
  });
  const orders = await git.changes!(connectorContext({ path: repo!.dir }), { since: '2026-11-24T07:00:00Z', until: window.until, path: 'services/orders' });
  t.deepEqual(
    orders.commits?.map((c) => c.sha),
    [pool, first],
  );
  t.deepEqual(await git.changes!(connectorContext({ path: repo!.dir }), { since: window.until, until: window.since }), {
    ok: false,
    problem: 'until is before since',
  });
});

testNeeding(test, gitMissing, 'query answers a committed file at the branch commit, and a missing one is a problem', async (t) => {
  const git = await plugin();
  const r = await git.query!(connectorContext({ path: repo!.dir }), { query: 'services/orders/service.yaml' });
  t.deepEqual(r, {
    ok: true,
    problem: null,
    data: { path: 'services/orders/service.yaml', commit: repo!.shas[2], size: 22, binary: false, text: 'name: orders\npool: 20\n', truncated: false },
  });
  t.deepEqual(await git.query!(connectorContext({ path: repo!.dir }), { query: 'services/ledger/service.yaml' }), {
    ok: false,
    problem: `no file services/ledger/service.yaml at commit ${repo!.shas[2]!.slice(0, 12)}`,
    data: null,
  });
});
