import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { makeOperating, startApp, type TestApp } from './helpers/app.ts';
import { testNeeding } from './helpers/needs.ts';
import plugin, { codeownersMatch, parseCodeowners, servicesInManifest } from '../plugins/connectors/git/index.ts';

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
});
