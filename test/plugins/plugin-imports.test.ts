// The loader's import rule: a plugin folder stands alone. The entry and every module it imports
// are read before anything runs; an import leaving the folder (other than `import type` of the
// plugin contract) makes the plugin broken, naming the file and the import.
import test, { type ExecutionContext } from 'ava';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../../host/log.ts';
import { loadPlugins, type PluginRegistry } from '../../host/plugins/loader.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/plugins/', import.meta.url));
const load = (dir: string) => loadPlugins({ dirs: [dir], log: silentLogger() });

function problemOf(r: PluginRegistry, name: string): string {
  const b = r.broken.find((x) => x.name === name);
  if (b === undefined) throw new Error(`${name} is not broken (loaded: ${r.loaded.map((l) => l.name).join(', ')})`);
  return b.problem;
}

/** One plugin folder `p` (manifest with entry index.mjs plus `files`) under a fresh root; `outside` files go beside it. */
function temp(t: ExecutionContext, files: Record<string, string>, outside: Record<string, string> = {}): string {
  const root = mkdtempSync(path.join(tmpdir(), 'oncall-plugin-imports-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const write = (base: string, all: Record<string, string>) => {
    for (const [name, text] of Object.entries(all)) {
      mkdirSync(path.dirname(path.join(base, name)), { recursive: true });
      writeFileSync(path.join(base, name), text);
    }
  };
  write(path.join(root, 'plugins', 'pp'), {
    'plugin.json': JSON.stringify({ name: 'pp', version: '1.0.0', kind: 'normaliser', api: '^1.0.0', entry: 'index.mjs' }),
    ...files,
  });
  write(root, outside);
  return path.join(root, 'plugins');
}

const BODY = 'export default { normalise: () => null, detect: () => false };\n';

test('an entry importing another plugin folder is broken, naming the file and the import', async (t) => {
  const r = await load(FIXTURES);
  t.regex(
    problemOf(r, 'imports-outside'),
    /^plugin "imports-outside" 1\.0\.0 in .*imports-outside: index\.ts imports "\.\.\/good-normaliser\/index\.ts", which is outside the plugin folder; a plugin folder must stand alone/,
  );
});

test('a module the entry imports is read too: a dynamic import two files down is found', async (t) => {
  const r = await load(FIXTURES);
  t.regex(problemOf(r, 'imports-outside-deep'), /: lib\/detect\.ts imports "\.\.\/\.\.\/good-normaliser\/index\.ts", which is outside the plugin folder/);
});

test('import type of the contract, own modules, export-from, node: builtins and packages are accepted', async (t) => {
  const r = await load(FIXTURES);
  const p = r.loaded.find((l) => l.name === 'imports-inside');
  t.truthy(p, 'imports-inside loads');
  t.false(r.broken.some((b) => b.name === 'imports-inside'));
});

test('the import is refused before anything runs: the outside module is never executed', async (t) => {
  const marker = path.join(tmpdir(), `oncall-plugin-ran-${process.pid}-${Date.now()}`);
  const dir = temp(
    t,
    { 'index.mjs': `import '../../outside.mjs';\n${BODY}` },
    { 'outside.mjs': `import { writeFileSync } from 'node:fs';\nwriteFileSync(${JSON.stringify(marker)}, 'ran');\n` },
  );
  const r = await load(dir);
  t.regex(problemOf(r, 'pp'), /index\.mjs imports "\.\.\/\.\.\/outside\.mjs", which is outside the plugin folder/);
  t.false(existsSync(marker));
});

test('import type leaving the folder is accepted only for the contract module', async (t) => {
  const ok = temp(t, {
    'index.ts': `import type { NormaliserPlugin } from '../../sdk/contract.ts';\nconst p: NormaliserPlugin = { normalise: () => null, detect: () => false };\nexport default p;\n`,
    'plugin.json': JSON.stringify({ name: 'pp', version: '1.0.0', kind: 'normaliser', api: '^1.0.0', entry: 'index.ts' }),
  });
  t.deepEqual(
    (await load(ok)).loaded.map((l) => l.name),
    ['pp'],
  );
  const other = temp(t, {
    'index.ts': `import type { Thing } from '../../host/ledger/ledger.service.ts';\nexport default { normalise: (): Thing | null => null, detect: () => false };\n`,
    'plugin.json': JSON.stringify({ name: 'pp', version: '1.0.0', kind: 'normaliser', api: '^1.0.0', entry: 'index.ts' }),
  });
  t.regex(problemOf(await load(other), 'pp'), /index\.ts imports "\.\.\/\.\.\/host\/ledger\/ledger\.service\.ts", which is outside the plugin folder/);
  const value = temp(t, {
    'index.ts': `import { PLUGIN } from '../../sdk/contract.ts';\nexport default { normalise: () => PLUGIN, detect: () => false };\n`,
    'plugin.json': JSON.stringify({ name: 'pp', version: '1.0.0', kind: 'normaliser', api: '^1.0.0', entry: 'index.ts' }),
  });
  t.regex(problemOf(await load(value), 'pp'), /index\.ts imports "\.\.\/\.\.\/sdk\/contract\.ts", which is outside the plugin folder/);
});

test('a computed import(), an absolute path, a URL and a symlink out are refused', async (t) => {
  t.regex(
    problemOf(await load(temp(t, { 'index.mjs': `const m = 'x';\nawait import('../' + m + '.mjs');\n${BODY}` })), 'pp'),
    /index\.mjs has an import\(\) of a computed specifier, which cannot be checked/,
  );
  t.regex(
    problemOf(await load(temp(t, { 'index.mjs': `import '/etc/hostname.mjs';\n${BODY}` })), 'pp'),
    /index\.mjs imports "\/etc\/hostname\.mjs", which is outside the plugin folder/,
  );
  t.regex(
    problemOf(await load(temp(t, { 'index.mjs': `import 'data:text/javascript,export default 1';\n${BODY}` })), 'pp'),
    /index\.mjs imports "data:text\/javascript,export default 1"; a plugin imports only files in its folder, packages and node: builtins/,
  );
  const dir = temp(t, { 'index.mjs': `import './lib/linked.mjs';\n${BODY}` }, { 'elsewhere/linked.mjs': 'export const x = 1;\n' });
  const { symlinkSync } = await import('node:fs');
  mkdirSync(path.join(dir, 'pp', 'lib'), { recursive: true });
  symlinkSync(path.join(dir, '..', 'elsewhere', 'linked.mjs'), path.join(dir, 'pp', 'lib', 'linked.mjs'));
  t.regex(problemOf(await load(dir), 'pp'), /index\.mjs imports "\.\/lib\/linked\.mjs", which links outside the plugin folder/);
});

test('a relative import of a file that is not there is reported by name', async (t) => {
  t.regex(problemOf(await load(temp(t, { 'index.mjs': `import './gone.mjs';\n${BODY}` })), 'pp'), /index\.mjs imports "\.\/gone\.mjs", which does not exist/);
});
