import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { makeHistory } from '../helpers/git-history.ts';
import { testNeeding } from '../helpers/needs.ts';
import { pluginHttp } from '../../host/plugins/http-client.ts';
import { pluginLibrary } from '../../host/plugins/lib/index.ts';
import type { ConnectorContext } from '../../host/plugins/contract.ts';
import plugin, { codeownersMatch, parseCodeowners, servicesInManifest } from '../../plugins/connectors/git/index.ts';

const TOKEN = 'ghp_SECRETgit0123456789abcdefTOKEN';

const CODEOWNERS = `# who owns what
*                    @org/platform
/services/payments/  @org/payments alice@bank.example
/services/ledger/    @org/ledger
services/search      @org/search   # no folder yet
`;

const CATALOG = `apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: ledger-api
  description: "the ledger's API"
  annotations:
    name: not-this-one
spec:
  type: service
  owner: group:ledger
  lifecycle: production
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: ledger-client
spec:
  type: library
`;

/** A throwaway repository: CODEOWNERS, manifests, a folder without a manifest, a big file; branch main (and feature). */
function makeRepo(t: ExecutionContext): { dir: string; commit: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-git-repo-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@bank.example', '-c', 'commit.gpgsign=false', ...args], {
      cwd: dir,
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
    })
      .toString()
      .trim();
  git('init', '-q', '-b', 'main');
  const put = (p: string, text: string) => {
    mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
    writeFileSync(path.join(dir, p), text);
  };
  put('CODEOWNERS', CODEOWNERS);
  put('services/payments/service.yaml', 'name: payments # the payments API\nowner: team-payments\nports:\n  - 8080\n');
  put('services/ledger/catalog-info.yaml', CATALOG);
  put('services/notifications/README.md', '# notifications\n');
  put('docs/big.txt', 'x'.repeat(300 * 1024));
  put('bin.dat', '\0\x01\x02binary');
  git('add', '-A');
  git('commit', '-q', '-m', 'first');
  git('branch', 'feature');
  // Uncommitted content is never read.
  put('services/draft/service.yaml', 'name: draft\n');
  return { dir, commit: git('rev-parse', 'HEAD') };
}

async function operating(t: ExecutionContext): Promise<TestApp> {
  const ta = await startApp(t);
  await makeOperating(ta);
  return ta;
}

const tryIt = (ta: TestApp, settings: Record<string, unknown>) => ta.call('POST', '/v1/connectors/test', { body: { kind: 'git', settings } });

// ---- parsing

test('CODEOWNERS rules are parsed and matched like GitHub does (last match wins)', (t) => {
  const rules = parseCodeowners(CODEOWNERS);
  t.deepEqual(
    rules.map((r) => [r.pattern, r.owners]),
    [
      ['*', ['@org/platform']],
      ['/services/payments/', ['@org/payments', 'alice@bank.example']],
      ['/services/ledger/', ['@org/ledger']],
      ['services/search', ['@org/search']],
    ],
  );
  t.true(codeownersMatch('/services/payments/', 'services/payments/service.yaml'));
  t.false(codeownersMatch('/services/payments/', 'other/services/payments/x'));
  t.true(codeownersMatch('*.yaml', 'a/b/c.yaml'));
  t.true(codeownersMatch('docs/**/x.md', 'docs/a/b/x.md'));
  t.false(codeownersMatch('/docs/*.md', 'docs/a/x.md'));
  t.true(codeownersMatch('/services/payments/', 'services/payments'), 'a folder given without its slash');
  t.true(codeownersMatch('services/search', 'services/search/api/x.go'));
  t.false(codeownersMatch('services/search', 'services/searchable/x'));
  t.true(codeownersMatch('*', 'anything/at/all'));
});

test('manifests are read as YAML: top-level name, Backstage metadata.name of components', (t) => {
  t.deepEqual(
    servicesInManifest('service.yaml', 'name: "orders"  # comment\nowner: x\n').map((f) => f.name),
    ['orders'],
  );
  t.deepEqual(
    servicesInManifest('service.yaml', '{name: flow-style, owner: y}').map((f) => f.name),
    ['flow-style'],
    'flow style, which the old hand-written reader skipped',
  );
  t.deepEqual(servicesInManifest('service.yaml', 'name: [not, a, name]\n'), [], 'a list is not a name');
  t.deepEqual(servicesInManifest('service.yaml', 'name: ok\n: : broken\n'), [], 'a document that does not parse is skipped');
  const laughs = [
    'a: &a [x,x,x,x,x,x,x,x,x]',
    ...'bcdef'.split('').map((k, i) => `${k}: &${k} [${Array(9).fill(`*${'abcde'[i]}`).join(',')}]`),
    'name: laughs',
  ].join('\n');
  t.deepEqual(
    servicesInManifest('service.yaml', `${laughs}\n---\nname: after\n`).map((f) => f.name),
    ['after'],
    'an alias bomb is skipped, the next document read',
  );
  t.deepEqual(servicesInManifest('services/payments/service.yaml', 'name: payments\nowner: team-payments\n'), [
    { name: 'payments', evidence: { manifest: 'service', owner: 'team-payments' } },
  ]);
  const found = servicesInManifest('services/ledger/catalog-info.yaml', CATALOG);
  t.deepEqual(
    found.map((f) => f.name),
    ['ledger-api'],
    'the library is left out; annotations.name is not metadata.name',
  );
  t.like(found[0]!.evidence, { kind: 'Component', type: 'service', owner: 'group:ledger', lifecycle: 'production' });
});

// ---- test

test('a local path: the test reads the commit, the branch and where CODEOWNERS is', async (t) => {
  const repo = makeRepo(t);
  const ta = await operating(t);
  const res = await tryIt(ta, { path: repo.dir });
  t.is(res.status, 200);
  t.true(res.body.ok, res.body.problem ?? '');
  t.like(res.body.found, { commit: repo.commit, branch: 'main', codeowners: 'CODEOWNERS', codeowners_rules: 4 });
  const feature = await tryIt(ta, { path: repo.dir, branch: 'feature' });
  t.true(feature.body.ok);
  t.is(feature.body.found.branch, 'feature');
  const missing = await tryIt(ta, { path: repo.dir, branch: 'nope' });
  t.false(missing.body.ok);
  t.regex(missing.body.problem, /has no branch nope/);
});

test('a file:// clone URL is cloned shallowly and read the same way', async (t) => {
  const repo = makeRepo(t);
  const ta = await operating(t);
  const res = await tryIt(ta, { url: `file://${repo.dir}` });
  t.true(res.body.ok, res.body.problem ?? '');
  t.like(res.body.found, { commit: repo.commit, branch: 'main', codeowners: 'CODEOWNERS' });
  const feature = await tryIt(ta, { url: `file://${repo.dir}`, branch: 'feature' });
  t.true(feature.body.ok, feature.body.problem ?? '');
  t.is(feature.body.found.branch, 'feature');
  const missing = await tryIt(ta, { url: `file://${repo.dir}`, branch: 'nope' });
  t.false(missing.body.ok);
  t.regex(missing.body.problem, /cannot clone .*nope/);
});

test('a bad path, a folder that is not a repository and a bad URL are problems, not errors', async (t) => {
  const ta = await operating(t);
  const empty = mkdtempSync(path.join(tmpdir(), 'oncall-not-git-'));
  t.teardown(() => rmSync(empty, { recursive: true, force: true }));
  const gone = await tryIt(ta, { path: '/nonexistent/oncall/repo' });
  t.is(gone.status, 200);
  t.false(gone.body.ok);
  t.is(gone.body.problem, 'no folder /nonexistent/oncall/repo on the service machine');
  const notGit = await tryIt(ta, { path: empty });
  t.false(notGit.body.ok);
  t.regex(notGit.body.problem, /not a git repository/);
  const noRepo = await tryIt(ta, { url: `file://${empty}/nothing.git` });
  t.false(noRepo.body.ok);
  t.regex(noRepo.body.problem, /^cannot clone file:\/\//);
  // Settings that are refused before anything runs.
  for (const settings of [
    {},
    { path: '/a', url: 'file:///a' },
    { path: 'relative/path' },
    { url: 'https://user:pw@git.example/r.git' },
    { path: '/r', branch: '-x' },
  ]) {
    const res = await tryIt(ta, settings);
    t.is(res.status, 400, JSON.stringify(settings));
    t.is(res.body.error, 'invalid_settings');
  }
});

// ---- query

test('queries read a committed file (capped), list a folder and list the CODEOWNERS entries', async (t) => {
  const repo = makeRepo(t);
  const ta = await operating(t);
  t.is((await ta.call('PUT', '/v1/connectors/repo', { body: { kind: 'git', settings: { path: repo.dir } } })).status, 201);
  const q = (query: string, params?: Record<string, string>) =>
    ta.call('POST', '/v1/connectors/repo/query', { body: { query, ...(params === undefined ? {} : { params }) } });

  const file = await q('services/payments/service.yaml');
  t.true(file.body.ok, file.body.problem ?? '');
  t.like(file.body.data, { path: 'services/payments/service.yaml', commit: repo.commit, binary: false, truncated: false });
  t.regex(file.body.data.text, /^name: payments/);

  const big = await q('/docs/big.txt');
  t.true(big.body.ok);
  t.is(big.body.data.size, 300 * 1024);
  t.true(big.body.data.truncated);
  t.is(big.body.data.text.length, 256 * 1024);

  const bin = await q('bin.dat');
  t.true(bin.body.ok);
  t.like(bin.body.data, { binary: true, text: null });

  const owners = await q('-', { op: 'codeowners' });
  t.true(owners.body.ok);
  t.is(owners.body.data.path, 'CODEOWNERS');
  t.deepEqual(owners.body.data.entries[1], { line: 3, pattern: '/services/payments/', owners: ['@org/payments', 'alice@bank.example'] });

  const tree = await q('services', { op: 'tree' });
  t.true(tree.body.ok);
  t.deepEqual(
    tree.body.data.files,
    ['services/ledger/catalog-info.yaml', 'services/notifications/README.md', 'services/payments/service.yaml'],
    'uncommitted files are not read',
  );

  for (const [query, problem] of [
    ['services/draft/service.yaml', /^no file services\/draft\/service.yaml at commit/],
    ['services/payments', /is a folder/],
    ['../../etc/passwd', /must be a path inside the repository/],
  ] as const) {
    const res = await q(query);
    t.is(res.status, 200);
    t.false(res.body.ok, query);
    t.regex(res.body.problem, problem);
  }
  t.regex((await q('x', { op: 'rm' })).body.problem, /unknown op/);
});

// ---- changes

/** A plugin context as the host builds one for a call (no host needed). */
const callCtx = (settings: Record<string, unknown>): ConnectorContext => ({
  log: { info() {}, warn() {}, error() {} },
  settings,
  timeoutMs: 15_000,
  http: pluginHttp({ settings, secrets: [] }),
  lib: pluginLibrary,
});

/** Four commits on 24 November 2026 (UTC): orders at 07:00 and 08:10, payments at 07:40, docs at 08:50. */
function history(t: ExecutionContext) {
  return makeHistory(t, [
    { at: '2026-11-24T07:00:00Z', author: 'Ann Admin', email: 'ann@bank.example', subject: 'orders: first', files: { 'services/orders/app.txt': '1' } },
    { at: '2026-11-24T07:40:00Z', author: 'Bo Builder', email: 'bo@bank.example', subject: 'payments: retry', files: { 'services/payments/app.txt': '1' } },
    { at: '2026-11-24T08:10:00Z', author: 'Cy Coder', email: 'cy@bank.example', subject: 'orders: raise pool', files: { 'services/orders/app.txt': '2' } },
    { at: '2026-11-24T08:50:00Z', author: 'Di Docs', email: 'di@bank.example', subject: 'docs', files: { 'README.md': 'hi' } },
  ]);
}

test('the connector declares that it reads changes', (t) => {
  const manifest = JSON.parse(readFileSync(new URL('../../plugins/connectors/git/plugin.json', import.meta.url), 'utf8'));
  t.deepEqual(Object.keys(manifest.reads), ['changes'], 'in its manifest (plugin API 1.5)');
  t.is(typeof plugin.changes, 'function');
});

test('changes answers the commits of a window newest first, by committer date, bounds included, authors by name only', async (t) => {
  const { dir, shas } = history(t);
  const changes = (req: { since: string; until: string; path?: string; limit?: number }) => plugin.changes!(callCtx({ path: dir }), req);

  const all = await changes({ since: '2026-11-24T07:40:00Z', until: '2026-11-24T08:50:00Z' });
  t.true(all.ok, all.problem ?? '');
  t.is(all.problem, null);
  t.deepEqual(all.commits, [
    { sha: shas[3], at: '2026-11-24T08:50:00.000Z', author: 'Di Docs', subject: 'docs' },
    { sha: shas[2], at: '2026-11-24T08:10:00.000Z', author: 'Cy Coder', subject: 'orders: raise pool' },
    { sha: shas[1], at: '2026-11-24T07:40:00.000Z', author: 'Bo Builder', subject: 'payments: retry' },
  ]);
  t.false(JSON.stringify(all).includes('@bank.example'), 'no e-mail address is answered');

  const justAfter = await changes({ since: '2026-11-24T07:40:00.001Z', until: '2026-11-24T08:49:59.999Z' });
  t.deepEqual(
    justAfter.commits!.map((c) => c.sha),
    [shas[2]],
    'a commit a millisecond outside either end is left out',
  );

  const orders = await changes({ since: '2026-11-24T06:00:00Z', until: '2026-11-24T09:00:00Z', path: 'services/orders' });
  t.deepEqual(
    orders.commits!.map((c) => c.sha),
    [shas[2], shas[0]],
    'only commits touching the folder',
  );
  const dot = await changes({ since: '2026-11-24T06:00:00Z', until: '2026-11-24T09:00:00Z', path: '.' });
  t.is(dot.commits!.length, 4, '"." is the whole repository');
  const two = await changes({ since: '2026-11-24T06:00:00Z', until: '2026-11-24T09:00:00Z', limit: 2 });
  t.deepEqual(
    two.commits!.map((c) => c.sha),
    [shas[3], shas[2]],
    'the newest up to the limit',
  );
  const none = await changes({ since: '2026-11-24T09:00:00Z', until: '2026-11-24T10:00:00Z' });
  t.deepEqual(none, { ok: true, problem: null, commits: [] });
});

test('changes through a file:// clone reads the history since the window; the oldest cloned commit is not taken for a change to every folder', async (t) => {
  const { dir, shas } = history(t);
  const url = `file://${dir}`;
  // The clone is cut at 07:40 (the payments commit): without deepening, git would say that
  // commit added services/orders too.
  const orders = await plugin.changes!(callCtx({ url }), { since: '2026-11-24T07:30:00Z', until: '2026-11-24T09:00:00Z', path: 'services/orders' });
  t.true(orders.ok, orders.problem ?? '');
  t.deepEqual(
    orders.commits!.map((c) => c.sha),
    [shas[2]],
  );
  const payments = await plugin.changes!(callCtx({ url }), { since: '2026-11-24T07:30:00Z', until: '2026-11-24T09:00:00Z', path: 'services/payments' });
  t.deepEqual(
    payments.commits!.map((c) => c.sha),
    [shas[1]],
    'a real change at the clone boundary stays',
  );
  const all = await plugin.changes!(callCtx({ url }), { since: '2026-11-24T07:30:00Z', until: '2026-11-24T08:20:00Z' });
  t.deepEqual(
    all.commits!.map((c) => c.sha),
    [shas[2], shas[1]],
  );
  const empty = await plugin.changes!(callCtx({ url }), { since: '2026-11-24T09:00:00Z', until: '2026-11-24T10:00:00Z' });
  t.deepEqual(empty, { ok: true, problem: null, commits: [] }, 'no commit since the window opened: nothing, not a problem');
  const branch = await plugin.changes!(callCtx({ url, branch: 'nope' }), { since: '2026-11-24T07:30:00Z', until: '2026-11-24T09:00:00Z' });
  t.false(branch.ok);
  t.regex(branch.problem!, /^cannot clone file:\/\/.*nope/);
});

test('changes refuses a bad window, folder or limit, and a repository it cannot read is a problem', async (t) => {
  const { dir } = history(t);
  const ask = (req: { since: string; until: string; path?: string; limit?: number }, settings: Record<string, unknown> = { path: dir }) =>
    plugin.changes!(callCtx(settings), req);
  const w = { since: '2026-11-24T07:00:00Z', until: '2026-11-24T09:00:00Z' };
  t.deepEqual(await ask({ since: 'yesterday', until: w.until }), { ok: false, problem: 'since and until must be ISO 8601 times' });
  t.deepEqual(await ask({ since: w.until, until: w.since }), { ok: false, problem: 'until is before since' });
  t.regex((await ask({ ...w, path: '../etc' })).problem!, /path must be a folder inside the repository/);
  t.regex((await ask({ ...w, limit: 0 })).problem!, /limit must be a whole number from 1 to 1000/);
  t.regex((await ask({ ...w, limit: 1001 })).problem!, /limit must be/);
  const gone = await ask(w, { path: '/nonexistent/oncall/repo' });
  t.deepEqual(gone, { ok: false, problem: 'no folder /nonexistent/oncall/repo on the service machine' });
});

// ---- the token

/** A self-signed certificate for 127.0.0.1 made with openssl; null when openssl is missing. */
function selfSigned(t: ExecutionContext): { key: string; cert: string; certFile: string } | null {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-git-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      path.join(dir, 'key.pem'),
      '-out',
      path.join(dir, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  if (r.status !== 0) return null;
  return { key: readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: readFileSync(path.join(dir, 'cert.pem'), 'utf8'), certFile: path.join(dir, 'cert.pem') };
}

const openssl = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0 ? null : 'openssl is not installed';

testNeeding(openssl, 'an https token is sent as a header and never appears in problems, answers, logs or the ledger', async (t) => {
  const tls = selfSigned(t)!;
  const seen: Array<string | undefined> = [];
  const srv = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    seen.push(req.headers.authorization);
    res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' });
    // A hostile server echoing what it was sent: still scrubbed.
    res.end(`denied ${TOKEN}`);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))));
  const url = `https://127.0.0.1:${(srv.address() as AddressInfo).port}/org/repo.git`;
  // git trusts the test's certificate through GIT_SSL_CAINFO, one of the variables passed to it.
  const before = process.env.GIT_SSL_CAINFO;
  process.env.GIT_SSL_CAINFO = tls.certFile;
  t.teardown(() => {
    if (before === undefined) delete process.env.GIT_SSL_CAINFO;
    else process.env.GIT_SSL_CAINFO = before;
  });

  const ta = await operating(t);
  const tested = await tryIt(ta, { url, token: TOKEN });
  t.false(tested.body.ok);
  t.regex(tested.body.problem, /authentication failed/);
  t.true(seen.includes(`Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`), 'the token went as a basic-auth header');

  t.is((await ta.call('PUT', '/v1/connectors/remote', { body: { kind: 'git', settings: { url, token: TOKEN, username: 'oauth2' } } })).status, 201);
  const checked = await ta.call('POST', '/v1/connectors/remote/check');
  t.false(checked.body.check.ok);
  t.true(seen.includes(`Basic ${Buffer.from(`oauth2:${TOKEN}`).toString('base64')}`));
  const listed = await ta.call('GET', '/v1/connectors/remote');
  t.deepEqual(listed.body.settings.token, { set: true });
  await ta.call('POST', '/v1/discover');
  await ta.app.discovery.idle();

  const ledger = await ta.call('GET', '/v1/ledger?limit=2000');
  const b64 = Buffer.from(`oauth2:${TOKEN}`).toString('base64');
  for (const [where, text] of Object.entries({
    answers: JSON.stringify([tested.body, checked.body, listed.body]),
    logs: ta.logs.join('\n'),
    ledger: JSON.stringify(ledger.body),
  })) {
    t.false(text.includes(TOKEN), `token in ${where}`);
    t.false(text.includes(b64), `header in ${where}`);
  }
});

test('the plugin scrubs the token from its own problems and refuses a token over plain http', async (t) => {
  const ctx = (settings: Record<string, unknown>) => ({ log: { info() {}, warn() {}, error() {} }, settings, timeoutMs: 10_000 });
  const plain = await plugin.test(ctx({ url: 'http://127.0.0.1:9/r.git', token: TOKEN }));
  t.false(plain.ok);
  t.regex(plain.problem!, /only sent over https/);
  const refused = await plugin.test(ctx({ url: 'https://127.0.0.1:9/r.git', token: TOKEN }));
  t.false(refused.ok);
  t.false(refused.problem!.includes(TOKEN));
  const changes = await plugin.changes!(callCtx({ url: 'https://127.0.0.1:9/r.git', token: TOKEN }), {
    since: '2026-11-24T07:00:00Z',
    until: '2026-11-24T08:00:00Z',
  });
  t.false(changes.ok);
  t.regex(changes.problem!, /^cannot clone https:\/\/127\.0\.0\.1:9\/r\.git/);
  t.false(changes.problem!.includes(TOKEN));
});
