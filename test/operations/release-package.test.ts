// The documented production install (docs/install.md): `npm pack`, unpack, `npm ci --omit=dev`,
// start, with npm on the machine's own Node.js (Debian's 20) as an operator has it. The package
// alone must install (its lockfile rides along as npm-shrinkwrap.json; no .npmrc is needed), run
// the JavaScript compiled into it with Node's type stripping off (bin/compile.js: no TypeScript
// is loaded, docs/performance.md "Idle memory"), load every plugin and pack it ships, and serve
// the console built into it.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import knex from 'knex';
import { knownMigrations } from '../../host/storage/migrate.ts';
import { copySource } from '../helpers/source-copy.ts';
import { waitFor } from '../helpers/wait.ts';
import { listeningPort } from '../helpers/listening.ts';

/** PATH without any node_modules/.bin: npm runs on the machine's Node.js, as it would for an operator. */
const machinePath = (process.env.PATH ?? '')
  .split(path.delimiter)
  .filter((p) => !p.includes(`node_modules${path.sep}.bin`))
  .join(path.delimiter);
const machineEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SERVICE_') && !k.startsWith('TEST_') && !k.startsWith('npm_')) env[k] = v;
  return { ...env, PATH: machinePath };
};

function run(cmd: string, args: string[], cwd: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) =>
    execFile(cmd, args, { cwd, env: machineEnv(), timeout: 600_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, out: stdout + stderr }),
    ),
  );
}

test('npm pack, unpack, npm ci --omit=dev and start: the compiled service, without type stripping, loads every plugin and pack and serves the built console from the package alone', async (t) => {
  t.timeout(600_000);
  const work = mkdtempSync(path.join(tmpdir(), 'oncall-release-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));

  // The source as committed, with the dev dependencies beside it: packing builds the console and
  // compiles the TypeScript there.
  const source = path.join(work, 'source');
  copySource(source);
  const packed = await run('npm', ['pack', '--pack-destination', work], source);
  t.is(packed.code, 0, packed.out);
  const tgz = readdirSync(work).find((f) => f.endsWith('.tgz'));
  t.truthy(tgz, packed.out);
  t.false(existsSync(path.join(source, 'npm-shrinkwrap.json')), 'the copy made for the pack is removed after it');

  const install = path.join(work, 'opt-oncall');
  mkdirSync(install);
  t.is((await run('tar', ['-xzf', path.join(work, tgz!), '-C', install, '--strip-components=1'], work)).code, 0);
  for (const f of ['npm-shrinkwrap.json', 'web/dist/index.html', 'host/main.js', 'cli/commands/version.js', 'packs/core/index.js', 'bin/run.js'])
    t.true(existsSync(path.join(install, f)), `${f} is in the package`);
  t.deepEqual(
    ['bin', 'cli', 'host', 'plugins', 'packs'].flatMap((d) => filesBelow(path.join(install, d)).filter((f) => /\.[mc]?ts$/.test(f))),
    [],
    'the package runs compiled JavaScript and holds no TypeScript of its own',
  );
  t.false(existsSync(path.join(source, 'host', 'main.js')), 'the compiled files are removed from the source after the pack');
  t.false(existsSync(path.join(install, '.npmrc')), 'npm never packs .npmrc: the install must not need it');
  t.false(existsSync(path.join(install, 'test')), 'no tests in the package');

  const ci = await run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], install);
  t.is(ci.code, 0, ci.out);
  t.regex(ci.out, /keeping the console built in web\/dist/);
  t.false(existsSync(path.join(install, 'node_modules', 'vite')), 'no dev dependencies');
  t.true(existsSync(path.join(install, 'node_modules', '.bin', 'node')), 'the Node.js 24 the package brings');

  // A vendor's plugins: one in TypeScript alone, which a Node.js without type stripping cannot
  // run, and one with its compiled JavaScript beside it, which runs.
  const vendor = path.join(work, 'vendor-plugins');
  const NORMALISER = 'export default { normalise: () => null, detect: () => false };\n';
  for (const [name, files] of [
    ['vendor-ts', ['index.ts']],
    ['vendor-compiled', ['index.ts', 'index.js']],
  ] as const) {
    mkdirSync(path.join(vendor, name), { recursive: true });
    writeFileSync(path.join(vendor, name, 'plugin.json'), JSON.stringify({ name, version: '1.0.0', kind: 'normaliser', api: '^1.0.0', entry: 'index.ts' }));
    for (const f of files) writeFileSync(path.join(vendor, name, f), NORMALISER);
  }

  // docs/install.md's start command: the compiled host, with type stripping off, so that no
  // TypeScript can be loaded (it would fail loudly: the vendor's plugin above shows it).
  const data = path.join(work, 'data');
  const child = spawn(path.join(install, 'node_modules', '.bin', 'node'), ['--no-experimental-strip-types', 'host/main.js'], {
    cwd: install,
    env: { ...machineEnv(), SERVICE_DATA_DIR: data, SERVICE_PORT: '0', SERVICE_HOST: '127.0.0.1', SERVICE_PLUGINS_DIR: vendor },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const port = await waitFor(
    'the packaged service to listen',
    async () => {
      if (child.exitCode !== null) throw new Error(out);
      return listeningPort(out)?.toString() ?? null;
    },
    60_000,
    100,
  );
  const base = `http://127.0.0.1:${port}`;
  const page = await fetch(`${base}/`);
  t.is(page.status, 200);
  const html = await page.text();
  const script = /<script[^>]+src="([^"]+\.js)"/.exec(html)?.[1];
  t.truthy(script, html.slice(0, 500));
  const asset = await fetch(base + script!);
  t.is(asset.status, 200);
  t.is(await asset.text(), readFileSync(path.join(install, 'web', 'dist', script!.replace(/^\//, '')), 'utf8'), 'the console built into the package');
  t.is((await fetch(`${base}/health`)).status, 200);
  t.is((await fetch(`${base}/health/ready`)).status, 200);

  // Every plugin and pack the package ships is loaded, from its compiled entry; the vendor's
  // TypeScript-only plugin is refused for want of type stripping, its compiled one loads.
  const lines = out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; plugin?: { dir: string } });
  const loaded = lines.filter((l) => / loaded$/.test(l.msg) && l.plugin !== undefined).map((l) => l.plugin!.dir);
  const shipped = ['plugins', 'packs'].flatMap((d) => pluginFolders(path.join(install, d)));
  t.true(shipped.length >= 20, `${shipped.length} plugin folders in the package`);
  t.deepEqual([...loaded].sort(), [...shipped, path.join(vendor, 'vendor-compiled')].sort(), 'every shipped plugin and pack, and the compiled vendor plugin');
  const refused = lines.filter((l) => l.level >= 40 && l.plugin !== undefined);
  t.is(refused.length, 1, JSON.stringify(refused));
  t.regex(refused[0]!.msg, /plugin "vendor-ts" 1\.0\.0 .*entry "index\.ts" is TypeScript, which this service, started without type stripping/);

  // `npx oncall` runs the CLI's compiled commands on the Node.js the package brought, whatever npm runs on.
  const version = await run('npx', ['oncall', 'version'], install);
  t.is(version.code, 0, version.out);
  t.regex(version.out, /0\.\d+\.\d+/);
  child.kill('SIGTERM');
  await new Promise((resolve) => (child.exitCode === null ? child.once('exit', resolve) : resolve(null)));
  t.is(child.exitCode, 0, out.slice(-2000));

  // The package records its (compiled) migrations under the names a checkout gives them, so
  // either can run on a database the other migrated.
  const db = knex({ client: 'better-sqlite3', connection: { filename: path.join(data, 'service.db') }, useNullAsDefault: true });
  const names = ((await db('knex_migrations').select('name').orderBy('name')) as Array<{ name: string }>).map((r) => r.name);
  await db.destroy();
  t.deepEqual(names, await knownMigrations());
});

/** Every file below `dir`, recursively (none when it does not exist). */
function filesBelow(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => path.join(d.parentPath, d.name));
}

/** The folders holding a plugin.json below `dir`, as the loader finds them (host/plugins/loader.ts). */
function pluginFolders(dir: string): string[] {
  return filesBelow(dir)
    .filter((f) => path.basename(f) === 'plugin.json')
    .map((f) => path.dirname(f));
}
