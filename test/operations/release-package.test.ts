// The documented production install (docs/install.md): `npm pack`, unpack, `npm ci --omit=dev`,
// start, with npm on the machine's own Node.js (Debian's 20) as an operator has it. The package
// alone must install (its lockfile rides along as npm-shrinkwrap.json; no .npmrc is needed) and
// serve the console built into it.
import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { ROOT } from '../helpers/cli.ts';
import { waitFor } from '../helpers/wait.ts';

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

test('npm pack, unpack, npm ci --omit=dev and start serve the built console from the package alone', async (t) => {
  t.timeout(600_000);
  const work = mkdtempSync(path.join(tmpdir(), 'oncall-release-'));
  t.teardown(() => rmSync(work, { recursive: true, force: true }));

  // The source as committed (not this checkout's web/dist, which other tests read), with the
  // dev dependencies beside it: packing builds the console there.
  const source = path.join(work, 'source');
  const tracked = (await run('git', ['ls-files', '-z'], ROOT)).out.split('\0').filter((f) => f !== '' && existsSync(path.join(ROOT, f)));
  for (const f of tracked) {
    mkdirSync(path.dirname(path.join(source, f)), { recursive: true });
    cpSync(path.join(ROOT, f), path.join(source, f));
  }
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(source, 'node_modules'));
  const packed = await run('npm', ['pack', '--pack-destination', work], source);
  t.is(packed.code, 0, packed.out);
  const tgz = readdirSync(work).find((f) => f.endsWith('.tgz'));
  t.truthy(tgz, packed.out);
  t.false(existsSync(path.join(source, 'npm-shrinkwrap.json')), 'the copy made for the pack is removed after it');

  const install = path.join(work, 'opt-oncall');
  mkdirSync(install);
  t.is((await run('tar', ['-xzf', path.join(work, tgz!), '-C', install, '--strip-components=1'], work)).code, 0);
  for (const f of ['npm-shrinkwrap.json', 'web/dist/index.html', 'host/main.ts', 'bin/run.js'])
    t.true(existsSync(path.join(install, f)), `${f} is in the package`);
  t.false(existsSync(path.join(install, '.npmrc')), 'npm never packs .npmrc: the install must not need it');
  t.false(existsSync(path.join(install, 'test')), 'no tests in the package');

  const ci = await run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], install);
  t.is(ci.code, 0, ci.out);
  t.regex(ci.out, /keeping the console built in web\/dist/);
  t.false(existsSync(path.join(install, 'node_modules', 'vite')), 'no dev dependencies');
  t.true(existsSync(path.join(install, 'node_modules', '.bin', 'node')), 'the Node.js 24 the package brings');

  const data = path.join(work, 'data');
  const child = spawn(path.join(install, 'node_modules', '.bin', 'node'), ['host/main.ts'], {
    cwd: install,
    env: { ...machineEnv(), SERVICE_DATA_DIR: data, SERVICE_PORT: '0', SERVICE_HOST: '127.0.0.1' },
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
      return /Console and API on http:\/\/localhost:(\d+)/.exec(out)?.[1] ?? null;
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
  t.is((await fetch(`${base}/health/ready`)).status, 200);
  // `npx oncall` runs the CLI on the Node.js the package brought, whatever npm runs on.
  const version = await run('npx', ['oncall', 'version'], install);
  t.is(version.code, 0, version.out);
  t.regex(version.out, /0\.\d+\.\d+/);
  child.kill('SIGTERM');
});
