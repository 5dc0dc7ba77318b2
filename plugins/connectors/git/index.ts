import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type {
  ConnectorContext,
  ConnectorFindings,
  ConnectorPluginWithCapabilities,
  ConnectorQueryRequest,
  ConnectorQueryResult,
  ConnectorTestResult,
  DiscoveredService,
  DiscoveryResult,
} from '../../../host/plugins/contract.ts';

/**
 * A git repository read with the `git` command (read-only: clone, rev-parse, ls-tree, cat-file;
 * never a checkout, a hook or a push). A local `path` is read in place; a clone `url` is cloned
 * bare and shallow (one commit) into a temporary folder for each call, removed afterwards.
 * Only committed content of the branch (default HEAD) is read. See README.md.
 */

interface Settings {
  path?: string;
  url?: string;
  branch?: string;
  username?: string;
  token?: string;
  timeout_s?: number;
}

const DEFAULT_TIMEOUT_S = 15;
/** The most of one file a query answers. */
export const MAX_FILE_BYTES = 256 * 1024;
/** The most of one manifest discovery reads. */
const MAX_MANIFEST_BYTES = 64 * 1024;
const MAX_MANIFESTS = 200;
const MAX_TREE_BYTES = 8 * 1024 * 1024;
const MAX_SERVICES = 1000;
const MANIFEST_NAMES = new Set(['service.yaml', 'service.yml', 'catalog-info.yaml', 'catalog-info.yml']);
/** Where CODEOWNERS is looked for, in GitHub's order (then GitLab's). */
const CODEOWNERS_PATHS = ['.github/CODEOWNERS', 'CODEOWNERS', 'docs/CODEOWNERS', '.gitlab/CODEOWNERS'];
const SERVICE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
/** Variables of the service's environment git may see (proxies, ssh agent); nothing else. */
const PASSED_ENV = ['PATH', 'HOME', 'TMPDIR', 'SSH_AUTH_SOCK', 'http_proxy', 'https_proxy', 'no_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'GIT_SSL_CAINFO'];

/** A failure whose message is fit for a person (already scrubbed of the token). */
class GitProblem extends Error {}

/** What one call works on: the repository folder, the resolved commit and how to run git. */
interface Repo {
  dir: string;
  commit: string;
  branch: string | null;
  /** Where the repository is, for messages: the path or the URL (never with credentials). */
  where: string;
  git(args: string[], maxBytes?: number): Promise<{ out: Buffer; truncated: boolean }>;
}

function secretsOf(s: Settings): string[] {
  if (s.token === undefined) return [];
  const header = Buffer.from(`${s.username ?? 'x-access-token'}:${s.token}`, 'utf8').toString('base64');
  return [header, s.token].filter((x) => x.length >= 4);
}

function scrub(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join('[redacted]');
  return out;
}

/** The environment git runs with: a small selection of ours, no prompts, and the token as config. */
function gitEnv(s: Settings): NodeJS.ProcessEnv {
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

/** Runs git once, within the call's deadline and signal; a failure becomes a GitProblem. */
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
  const lines = stderr.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('hint:'));
  const text = lines.find((l) => l.startsWith('fatal:') || l.startsWith('error:')) ?? lines[0] ?? 'git failed without saying why';
  const msg = text.replace(/^(fatal|error):\s*/, '');
  if (/dubious ownership/.test(stderr)) return `${msg}; the repository belongs to another user: add it to safe.directory in the service user's git configuration`;
  if (/Authentication failed|could not read Username|could not read Password|terminal prompts disabled/i.test(stderr)) return 'authentication failed; check token (and username) or that the repository exists';
  if (/Permission denied \(publickey/.test(stderr)) return 'ssh authentication failed: the service user has no key the server accepts';
  if (/not a git repository/.test(stderr)) return 'not a git repository';
  return msg.length > 500 ? `${msg.slice(0, 500)}…` : msg;
}

/** Opens the repository of the settings; `use` runs with it and the clone is always removed. */
async function withRepo<T>(ctx: ConnectorContext, use: (repo: Repo) => Promise<T>): Promise<T> {
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
    dir = clone;
  } else if (s.path !== undefined) {
    where = s.path;
    const st = await stat(s.path).catch(() => null);
    if (st === null) throw new GitProblem(`no folder ${s.path} on the service machine`);
    if (!st.isDirectory()) throw new GitProblem(`${s.path} is not a folder`);
    dir = s.path;
  } else throw new GitProblem('give path or url');
  try {
    if (clone !== null) {
      const args = ['clone', '--bare', '--depth', '1', '--single-branch', '--no-tags', '--quiet'];
      if (s.branch !== undefined) args.push('--branch', s.branch);
      await runGit([...args, '--', s.url!, clone], base).catch((e: unknown) => {
        throw e instanceof GitProblem ? new GitProblem(`cannot clone ${where}: ${e.message}`) : e;
      });
    }
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
    return await use({ dir, commit, branch, where, git });
  } finally {
    if (clone !== null) await rm(clone, { recursive: true, force: true }).catch(() => {});
  }
}

/** A path inside the repository: relative, no `..`, no empty or `.` segment. */
function repoPath(p: string): string | null {
  const clean = p.trim().replace(/^\.?\/+/, '').replace(/\/+$/, '');
  if (clean === '' || clean.length > 1000 || clean.includes('\0')) return null;
  if (clean.split('/').some((seg) => seg === '' || seg === '.' || seg === '..')) return null;
  return clean;
}

interface TreeEntry {
  mode: string;
  type: string;
  oid: string;
  size: number | null;
  path: string;
}

/** The tree entry at a path of the commit, or null when there is none. */
async function entryAt(repo: Repo, p: string): Promise<TreeEntry | null> {
  const { out } = await repo.git(['ls-tree', '-z', '-l', '--full-tree', repo.commit, '--', p]);
  for (const rec of out.toString('utf8').split('\0')) {
    const m = /^(\d+) (\w+) ([0-9a-f]+)\s+(-|\d+)\t(.*)$/s.exec(rec);
    if (m !== null && m[5] === p) return { mode: m[1]!, type: m[2]!, oid: m[3]!, size: m[4] === '-' ? null : Number(m[4]), path: m[5]! };
  }
  return null;
}

/** A committed file's text (null when binary), read up to `cap` bytes. */
async function readBlob(repo: Repo, e: TreeEntry, cap: number): Promise<{ text: string | null; truncated: boolean }> {
  const { out, truncated } = await repo.git(['cat-file', 'blob', e.oid], cap);
  if (out.includes(0)) return { text: null, truncated };
  return { text: out.toString('utf8'), truncated };
}

/** Every file path of the commit (at most MAX_TREE_BYTES of names). */
async function listFiles(repo: Repo): Promise<{ files: string[]; truncated: boolean }> {
  const { out, truncated } = await repo.git(['ls-tree', '-r', '-z', '--name-only', '--full-tree', repo.commit], MAX_TREE_BYTES);
  const files = out.toString('utf8').split('\0').filter((f) => f !== '');
  if (truncated) files.pop();
  return { files, truncated };
}

export interface CodeownersEntry {
  line: number;
  pattern: string;
  owners: string[];
}

/** The CODEOWNERS rules: pattern and owners per line; comments, blank lines and GitLab sections skipped. */
export function parseCodeowners(text: string): CodeownersEntry[] {
  const out: CodeownersEntry[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (line === '' || /^\^?\[[^\]]*\]/.test(line)) return;
    const parts = line.split(/\s+/).map((p) => p.replace(/\\#/g, '#'));
    const pattern = parts[0]!;
    out.push({ line: i + 1, pattern, owners: parts.slice(1).filter((o) => o.includes('@')) });
  });
  return out;
}

/** Whether a CODEOWNERS pattern (gitignore-like) covers a path (a file or a folder). */
export function codeownersMatch(pattern: string, p: string): boolean {
  let pat = pattern;
  const dirOnly = pat.endsWith('/');
  if (dirOnly) pat = pat.replace(/\/+$/, '');
  const anchored = pat.startsWith('/') || pat.includes('/');
  pat = pat.replace(/^\/+/, '');
  if (pat === '' || pat === '*' || pat === '**') return true;
  let re = '';
  for (let i = 0; i < pat.length; i++) {
    const c = pat[i]!;
    if (c === '*' && pat[i + 1] === '*') {
      re += '.*';
      i++;
      if (pat[i + 1] === '/') i++;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${anchored ? '' : '(?:.*/)?'}${re}(?:/.*)?$`).test(p);
}

/** The owners of a path: the last matching rule wins, as in GitHub and GitLab. */
function ownersOf(rules: CodeownersEntry[], p: string): { owners: string[]; line: number } | null {
  for (let i = rules.length - 1; i >= 0; i--) if (codeownersMatch(rules[i]!.pattern, p)) return { owners: rules[i]!.owners, line: rules[i]!.line };
  return null;
}

async function readCodeowners(repo: Repo): Promise<{ path: string; rules: CodeownersEntry[]; truncated: boolean } | null> {
  for (const p of CODEOWNERS_PATHS) {
    const e = await entryAt(repo, p);
    if (e === null || e.type !== 'blob') continue;
    const { text, truncated } = await readBlob(repo, e, MAX_FILE_BYTES);
    return { path: p, rules: text === null ? [] : parseCodeowners(text), truncated };
  }
  return null;
}

const unquote = (v: string): string => v.replace(/\s+#.*$/, '').trim().replace(/^(['"])(.*)\1$/, '$2').trim();

/**
 * The top-level keys of one YAML document and the keys one level under each (`metadata.name`):
 * enough to read a manifest's names without a YAML library. Flow style, anchors and multi-line
 * values are not understood (such values are skipped).
 */
export function shallowYaml(doc: string): Map<string, string> {
  const out = new Map<string, string>();
  let parent: string | null = null;
  let childIndent: number | null = null;
  for (const raw of doc.split('\n')) {
    if (/^\s*(#.*)?$/.test(raw)) continue;
    const m = /^(\s*)([A-Za-z0-9_.-]+):(?:\s+(.*))?$/.exec(raw.replace(/\s+$/, ''));
    if (m === null) continue;
    const indent = m[1]!.length;
    const key = m[2]!;
    const value = m[3] === undefined ? '' : unquote(m[3]);
    if (indent === 0) {
      parent = key;
      childIndent = null;
      if (value !== '' && !/^[|>&*[{]/.test(value)) out.set(key, value);
    } else if (parent !== null) {
      childIndent ??= indent;
      if (indent === childIndent && value !== '' && !/^[|>&*[{]/.test(value) && !out.has(`${parent}.${key}`)) out.set(`${parent}.${key}`, value);
    }
  }
  return out;
}

/** Services named in one manifest: Backstage catalog-info (kind Component) or a service.yaml. */
export function servicesInManifest(file: string, text: string): Array<{ name: string; evidence: Record<string, unknown> }> {
  const base = path.posix.basename(file);
  const found: Array<{ name: string; evidence: Record<string, unknown> }> = [];
  const docs = text.split(/^---[ \t]*$/m);
  for (const doc of docs) {
    const y = shallowYaml(doc);
    if (base.startsWith('catalog-info.')) {
      const kind = y.get('kind');
      const type = y.get('spec.type') ?? null;
      if (kind !== 'Component' || type === 'library' || type === 'documentation') continue;
      const name = y.get('metadata.name');
      if (name !== undefined) found.push({ name, evidence: { manifest: 'backstage', kind, type, owner: y.get('spec.owner') ?? null, system: y.get('spec.system') ?? null, lifecycle: y.get('spec.lifecycle') ?? null } });
    } else {
      const name = y.get('name') ?? y.get('service') ?? y.get('metadata.name');
      if (name !== undefined) found.push({ name, evidence: { manifest: 'service', owner: y.get('owner') ?? y.get('team') ?? null } });
    }
  }
  return found;
}

const problemOf = (e: unknown, secrets: string[]): string => scrub(e instanceof Error ? e.message : String(e), secrets);

const plugin: ConnectorPluginWithCapabilities = {
  async test(ctx: ConnectorContext): Promise<ConnectorTestResult & ConnectorFindings> {
    const secrets = secretsOf(ctx.settings as unknown as Settings);
    try {
      return await withRepo(ctx, async (repo) => {
        const { out } = await repo.git(['show', '-s', '--format=%cI', repo.commit]);
        const codeowners = await readCodeowners(repo);
        return {
          ok: true,
          problem: null,
          found: { commit: repo.commit, branch: repo.branch, committed_at: out.toString('utf8').trim() || null, codeowners: codeowners?.path ?? null, codeowners_rules: codeowners?.rules.length ?? 0 },
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
    if (!['file', 'tree', 'codeowners'].includes(op)) return { ok: false, problem: `unknown op "${op.slice(0, 40)}": use file, tree or codeowners`, data: null };
    const p = op === 'tree' && request.query.trim() === '.' ? '.' : repoPath(request.query);
    if (op !== 'codeowners' && p === null) return { ok: false, problem: 'the query must be a path inside the repository, such as services/orders/service.yaml', data: null };
    try {
      return await withRepo(ctx, async (repo): Promise<ConnectorQueryResult> => {
        if (op === 'codeowners') {
          const c = await readCodeowners(repo);
          if (c === null) return { ok: false, problem: `no CODEOWNERS file (looked in ${CODEOWNERS_PATHS.join(', ')})`, data: { commit: repo.commit } };
          return { ok: true, problem: null, data: { path: c.path, commit: repo.commit, entries: c.rules, truncated: c.truncated } };
        }
        if (op === 'tree') {
          const { files, truncated } = await listFiles(repo);
          const under = p === '.' ? files : files.filter((f) => f === p || f.startsWith(`${p}/`));
          return { ok: true, problem: null, data: { path: p, commit: repo.commit, files: under.slice(0, 10_000), truncated: truncated || under.length > 10_000 } };
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
   * Proposes services (candidates, never services) from: manifests anywhere in the tree
   * (`service.yaml`/`.yml`: top-level `name:` or `service:`; `catalog-info.yaml`/`.yml`: Backstage
   * `kind: Component` documents' `metadata.name`, libraries and documentation left out), folders
   * `services/<name>/` at the top, and CODEOWNERS rules for `services/<name>`. Each carries the
   * commit, the path it came from and the CODEOWNERS owners of that path.
   */
  async discover(ctx: ConnectorContext): Promise<DiscoveryResult> {
    return withRepo(ctx, async (repo) => {
      const { files, truncated } = await listFiles(repo);
      const codeowners = await readCodeowners(repo);
      const rules = codeowners?.rules ?? [];
      const services: DiscoveredService[] = [];
      const add = (name: string, source: string, p: string, extra: Record<string, unknown> = {}) => {
        if (!SERVICE_NAME.test(name) || services.length >= MAX_SERVICES) return;
        const own = ownersOf(rules, p);
        services.push({ name, source, evidence: { path: p, commit: repo.commit, ...extra, ...(own === null ? {} : { owners: own.owners, codeowners: `${codeowners!.path}:${own.line}` }) } });
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
      ctx.log.info('git discovery read the repository', { commit: repo.commit, files: files.length, manifests: manifests.length, found: services.length, tree_truncated: truncated });
      return { services };
    }).catch((e: unknown) => {
      throw e instanceof GitProblem ? new Error(e.message) : e;
    });
  },
};

export default plugin;
