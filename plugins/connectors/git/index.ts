import path from 'node:path';
import type {
  ConnectorChangesRequest,
  ConnectorChangesResult,
  ConnectorContext,
  ConnectorFindings,
  ConnectorPluginWithCapabilities,
  ConnectorQueryRequest,
  ConnectorQueryResult,
  ConnectorTestResult,
  DiscoveredService,
  DiscoveryResult,
} from '../../../host/plugins/contract.ts';
import { changesOf } from './changes.ts';
import { CODEOWNERS_PATHS, ownersOf, readCodeowners } from './codeowners.ts';
import { MANIFEST_NAMES, servicesInManifest } from './manifests.ts';
import { entryAt, listFiles, readBlob, repoPath, withRepo } from './repo.ts';
import { actRevert, rehearseRevert, undoRevert } from './revert.ts';
import { GitProblem, scrub, secretsOf } from './run.ts';
import type { Settings } from './settings.ts';

export { codeownersMatch, parseCodeowners } from './codeowners.ts';
export { servicesInManifest } from './manifests.ts';

/**
 * A git repository read with the `git` command (reads: clone, fetch into that clone, rev-parse,
 * ls-tree, cat-file, log; never a checkout, a hook or a push). A local `path` is read in place; a
 * clone `url` is cloned bare and shallow (one commit, or for `changes` the history since the
 * window's start) into a temporary folder for each call, removed afterwards. Only committed
 * content of the branch (default HEAD) is read. The one action, `revert` (revert.ts), is the only
 * code that pushes, and only to `oncall/revert-<sha12>` branches, from a throwaway clone. See README.md.
 */

/** The most of one file a query answers. */
export const MAX_FILE_BYTES = 256 * 1024;
/** The most of one manifest discovery reads. */
const MAX_MANIFEST_BYTES = 64 * 1024;
const MAX_MANIFESTS = 200;
const MAX_SERVICES = 1000;
const SERVICE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

const problemOf = (e: unknown, secrets: string[]): string => scrub(e instanceof Error ? e.message : String(e), secrets);

const plugin: ConnectorPluginWithCapabilities = {
  async test(ctx: ConnectorContext): Promise<ConnectorTestResult & ConnectorFindings> {
    const secrets = secretsOf(ctx.settings as unknown as Settings);
    try {
      return await withRepo(ctx, async (repo) => {
        const { out } = await repo.git(['show', '-s', '--format=%cI', repo.commit]);
        const codeowners = await readCodeowners(repo, MAX_FILE_BYTES);
        return {
          ok: true,
          problem: null,
          found: {
            commit: repo.commit,
            branch: repo.branch,
            committed_at: out.toString('utf8').trim() || null,
            codeowners: codeowners?.path ?? null,
            codeowners_rules: codeowners?.rules.length ?? 0,
          },
        };
      });
    } catch (e) {
      if (!(e instanceof GitProblem)) throw e;
      return { ok: false, problem: problemOf(e, secrets) };
    }
  },

  /**
   * `query` is a path in the repository. `params.op`: `file` (default) answers
   * `{path, commit, size, text, binary, truncated}`; `tree` lists the files under the path (`.` for
   * all) as `{path, commit, files, truncated}`; `codeowners` (query ignored) answers
   * `{path, commit, entries: [{line, pattern, owners}]}`.
   */
  async query(ctx: ConnectorContext, request: ConnectorQueryRequest): Promise<ConnectorQueryResult> {
    const secrets = secretsOf(ctx.settings as unknown as Settings);
    const op = request.params?.op ?? 'file';
    if (!['file', 'tree', 'codeowners'].includes(op))
      return { ok: false, problem: `unknown op "${op.slice(0, 40)}": use file, tree or codeowners`, data: null };
    const p = op === 'tree' && request.query.trim() === '.' ? '.' : repoPath(request.query);
    if (op !== 'codeowners' && p === null)
      return { ok: false, problem: 'the query must be a path inside the repository, such as services/orders/service.yaml', data: null };
    try {
      return await withRepo(ctx, async (repo): Promise<ConnectorQueryResult> => {
        if (op === 'codeowners') {
          const c = await readCodeowners(repo, MAX_FILE_BYTES);
          if (c === null) return { ok: false, problem: `no CODEOWNERS file (looked in ${CODEOWNERS_PATHS.join(', ')})`, data: { commit: repo.commit } };
          return { ok: true, problem: null, data: { path: c.path, commit: repo.commit, entries: c.rules, truncated: c.truncated } };
        }
        if (op === 'tree') {
          const { files, truncated } = await listFiles(repo);
          const under = p === '.' ? files : files.filter((f) => f === p || f.startsWith(`${p}/`));
          return {
            ok: true,
            problem: null,
            data: { path: p, commit: repo.commit, files: under.slice(0, 10_000), truncated: truncated || under.length > 10_000 },
          };
        }
        const e = await entryAt(repo, p!);
        if (e === null) return { ok: false, problem: `no file ${p} at commit ${repo.commit.slice(0, 12)}`, data: null };
        if (e.type !== 'blob') return { ok: false, problem: `${p} is a folder, not a file (use op tree)`, data: null };
        const { text, truncated } = await readBlob(repo, e, MAX_FILE_BYTES);
        return { ok: true, problem: null, data: { path: p, commit: repo.commit, size: e.size, binary: text === null, text, truncated } };
      });
    } catch (e) {
      if (!(e instanceof GitProblem)) throw e;
      return { ok: false, problem: problemOf(e, secrets), data: null };
    }
  },

  /**
   * The commits of the branch between `since` and `until` (inclusive, by committer date), newest
   * first, at most `limit` (default 200, at most 1000), only those touching `path` when given:
   * `{sha, at, author, subject}`, the author by name only.
   */
  async changes(ctx: ConnectorContext, request: ConnectorChangesRequest): Promise<ConnectorChangesResult> {
    return changesOf(ctx, request);
  },

  /**
   * Proposes services (candidates, never services) from: manifests anywhere in the tree
   * (`service.yaml`/`.yml`: top-level `name:` or `service:`; `catalog-info.yaml`/`.yml`: Backstage
   * `kind: Component` documents' `metadata.name`, libraries and documentation left out), folders
   * `services/<name>/` at the top, and CODEOWNERS rules for `services/<name>`. Each carries the
   * commit, the path it came from and the CODEOWNERS owners of that path.
   */
  async discover(ctx: ConnectorContext): Promise<DiscoveryResult> {
    return withRepo(ctx, async (repo) => {
      const { files, truncated } = await listFiles(repo);
      const codeowners = await readCodeowners(repo, MAX_FILE_BYTES);
      const rules = codeowners?.rules ?? [];
      const services: DiscoveredService[] = [];
      const add = (name: string, source: string, p: string, extra: Record<string, unknown> = {}) => {
        if (!SERVICE_NAME.test(name) || services.length >= MAX_SERVICES) return;
        const own = ownersOf(rules, p);
        services.push({
          name,
          source,
          evidence: { path: p, commit: repo.commit, ...extra, ...(own === null ? {} : { owners: own.owners, codeowners: `${codeowners!.path}:${own.line}` }) },
        });
      };
      const manifests = files.filter((f) => MANIFEST_NAMES.has(path.posix.basename(f))).slice(0, MAX_MANIFESTS);
      for (const f of manifests) {
        const e = await entryAt(repo, f);
        if (e === null || e.type !== 'blob') continue;
        const { text } = await readBlob(repo, e, MAX_MANIFEST_BYTES);
        if (text === null) continue;
        for (const s of servicesInManifest(f, text)) add(s.name, 'manifest', f, s.evidence);
      }
      const folders = new Set<string>();
      for (const f of files) {
        const m = /^services\/([^/]+)\//.exec(f);
        if (m !== null) folders.add(m[1]!);
      }
      for (const name of [...folders].sort()) add(name, 'folder', `services/${name}`);
      for (const r of rules) {
        const m = /^\/?services\/([^/*?[\]\\]+)(?:\/|\/\*\*?)?$/.exec(r.pattern);
        if (m !== null) add(m[1]!, 'codeowners', `services/${m[1]}`);
      }
      ctx.log.info('git discovery read the repository', {
        commit: repo.commit,
        files: files.length,
        manifests: manifests.length,
        found: services.length,
        tree_truncated: truncated,
      });
      return { services };
    }).catch((e: unknown) => {
      throw e instanceof GitProblem ? new Error(e.message) : e;
    });
  },

  /** `revert` is the only action kind: see revert.ts. */
  rehearse: (ctx, action) => rehearseRevert(ctx, action),
  act: (ctx, action) => actRevert(ctx, action),
  undo: (ctx, action) => undoRevert(ctx, action),
};

export default plugin;
