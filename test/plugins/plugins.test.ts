import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test, { type ExecutionContext } from 'ava';
import { AppError } from '../../host/errors.ts';
import { Ledger } from '../../host/ledger/ledger.service.ts';
import { createLogger, silentLogger } from '../../host/log.ts';
import { resolveEntry } from '../../host/plugins/checks.ts';
import { loadPlugins, type BrokenPlugin, type PluginRegistry } from '../../host/plugins/loader.ts';
import { startApp } from '../helpers/app.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = path.join(REPO, 'test', 'fixtures', 'plugins');
const CONTRACT = path.join(REPO, 'host', 'plugins', 'contract.ts');

const fixture = (folder: string) => path.join(FIXTURES, folder);
const loadFixtures = (hostApi?: string) => loadPlugins({ dirs: [FIXTURES], log: silentLogger(), hostApi });

function brokenAt(registry: PluginRegistry, folder: string): BrokenPlugin {
  const found = registry.broken.find((b) => b.dir === fixture(folder));
  if (found === undefined) throw new Error(`${folder} is not reported as broken`);
  return found;
}

interface TempPlugin {
  manifest: Record<string, unknown> | string;
  /** Files inside the plugin folder; the default is `index.mjs` exporting a normaliser. */
  files?: Record<string, string>;
}

const NORMALISER = 'export default { normalise: () => null, detect: () => false };\n';

/** Writes plugin folders under a fresh directory, removed after the test. */
function tempPlugins(t: ExecutionContext, plugins: Record<string, TempPlugin>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'oncall-plugins-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  for (const [folder, p] of Object.entries(plugins)) {
    const dir = path.join(root, folder);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'plugin.json'), typeof p.manifest === 'string' ? p.manifest : JSON.stringify(p.manifest));
    for (const [name, text] of Object.entries(p.files ?? { 'index.mjs': NORMALISER })) {
      mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      writeFileSync(path.join(dir, name), text);
    }
  }
  return root;
}

const manifest = (fields: Record<string, unknown> = {}) => ({
  name: 'temp',
  version: '1.0.0',
  kind: 'normaliser',
  api: '^1.0.0',
  entry: 'index.mjs',
  ...fields,
});

// ---- good plugins, and the broken twin of each

test('a valid normaliser is loaded with its kind, version and working default export', async (t) => {
  const r = await loadFixtures();
  const p = r.loaded.find((l) => l.name === 'good-normaliser');
  t.like(p, { version: '1.0.0', kind: 'normaliser', dir: fixture('good-normaliser'), manifest: { aliases: ['goodtool'] } });
  const plugin = p!.plugin as { normalise(b: unknown): unknown; detect(b: unknown): boolean };
  t.like(plugin.normalise({ good: 'disk full', level: 'hi' }), [{ name: 'disk full', severity: 'critical' }]);
  t.true(plugin.detect({ good: 'x' }));
});

test('a normaliser whose default export lacks normalise() is reported and skipped', async (t) => {
  const r = await loadFixtures();
  t.false(r.loaded.some((l) => l.name === 'missing-function'));
  const b = brokenAt(r, 'missing-function');
  t.like(b, { name: 'missing-function', version: '1.0.0' });
  t.regex(b.problem, /^plugin "missing-function" 1\.0\.0 in .*missing-function: /);
  t.regex(b.problem, /no normalise\(\) function, which every normaliser needs/);
});

test('a valid connector with a secret setting is loaded with its settings schema', async (t) => {
  const r = await loadFixtures();
  const p = r.loaded.find((l) => l.name === 'good-connector');
  t.like(p, { version: '2.1.0', kind: 'connector', manifest: { settings: { properties: { api_key: { writeOnly: true } } } } });
  const plugin = p!.plugin as { test(ctx: unknown): unknown };
  t.deepEqual(plugin.test({ log: silentLogger(), settings: { api_key: 'k' } }), { ok: true, problem: null });
});

test('a connector whose settings schema does not compile is reported and skipped', async (t) => {
  const r = await loadFixtures();
  t.false(r.loaded.some((l) => l.name === 'bad-settings'));
  t.regex(brokenAt(r, 'bad-settings').problem, /^plugin "bad-settings" 1\.0\.0 in .*: settings is not a usable JSON Schema \(.*url\/type/);
});

test('a connector whose settings schema is not of an object is reported', async (t) => {
  const root = tempPlugins(t, {
    c: {
      manifest: manifest({ name: 'conn', kind: 'connector', settings: { type: 'string' } }),
      files: { 'index.mjs': 'export default { test: () => ({ ok: true, problem: null }) };' },
    },
  });
  const r = await loadPlugins({ dirs: [root], log: silentLogger() });
  t.deepEqual(r.loaded, []);
  t.regex(r.broken[0]!.problem, /plugin "conn" 1\.0\.0 .*settings must be a JSON Schema with "type": "object"/);
});

// ---- versions

test('the newest version of a name is loaded and the older one is superseded', async (t) => {
  const r = await loadFixtures();
  t.deepEqual(
    r.loaded.filter((l) => l.name === 'twin').map((l) => [l.version, l.dir]),
    [['1.2.0', fixture('two-versions/v2')]],
  );
  t.deepEqual(r.superseded, [{ name: 'twin', version: '1.0.0', dir: fixture('two-versions/v1'), by: '1.2.0' }]);
});

test('a newer version that is broken does not displace an older compatible one', async (t) => {
  const root = tempPlugins(t, {
    old: { manifest: manifest({ name: 'twin', version: '1.0.0' }) },
    new: { manifest: manifest({ name: 'twin', version: '2.0.0', api: '^2.0.0' }) },
  });
  const r = await loadPlugins({ dirs: [root], log: silentLogger() });
  t.deepEqual(
    r.loaded.map((l) => l.version),
    ['1.0.0'],
  );
  t.deepEqual(r.superseded, []);
  t.like(r.broken, [{ name: 'twin', version: '2.0.0' }]);
});

test('with the same version in two directories the one in the earlier directory wins', async (t) => {
  const first = tempPlugins(t, { a: { manifest: manifest({ name: 'twin' }) } });
  const second = tempPlugins(t, { a: { manifest: manifest({ name: 'twin' }) } });
  const r = await loadPlugins({ dirs: [first, second], log: silentLogger() });
  t.deepEqual(
    r.loaded.map((l) => l.dir),
    [path.join(first, 'a')],
  );
  t.deepEqual(r.superseded, [{ name: 'twin', version: '1.0.0', dir: path.join(second, 'a'), by: '1.0.0' }]);
});

test('a normaliser and a connector may share a name without superseding each other', async (t) => {
  const root = tempPlugins(t, {
    'normalisers/splunk': { manifest: manifest({ name: 'splunk', version: '3.0.0' }) },
    'connectors/splunk': {
      manifest: manifest({ name: 'splunk', kind: 'connector', settings: { type: 'object' } }),
      files: { 'index.mjs': 'export default { test: () => ({ ok: true, problem: null }) };' },
    },
  });
  const r = await loadPlugins({ dirs: [root], log: silentLogger() });
  t.deepEqual(
    r.loaded.map((l) => [l.name, l.kind, l.version]),
    [
      ['splunk', 'connector', '1.0.0'],
      ['splunk', 'normaliser', '3.0.0'],
    ],
  );
  t.deepEqual(r.superseded, []);
});

// ---- compatibility steps

test('a plugin built for another plugin API is reported with its range and the host API', async (t) => {
  const b = brokenAt(await loadFixtures(), 'wrong-api');
  t.like(b, { name: 'wrong-api', version: '1.0.0' });
  t.regex(b.problem, /plugin "wrong-api"/);
  t.regex(b.problem, /api range "\^9\.0\.0" does not accept this host's plugin API 1\.7\.0/);
});

test('the same plugin loads on a host whose plugin API its range accepts', async (t) => {
  const r = await loadFixtures('9.1.0');
  t.true(r.loaded.some((l) => l.name === 'wrong-api'));
  t.true(
    r.broken.some((b) => b.name === 'good-normaliser' && /\^1\.0\.0/.test(b.problem)),
    'and the ^1 plugins no longer fit',
  );
});

test('an api that is not a semver range is reported as such', async (t) => {
  const root = tempPlugins(t, { p: { manifest: manifest({ api: 'latest please' }) } });
  const r = await loadPlugins({ dirs: [root], log: silentLogger() });
  t.regex(r.broken[0]!.problem, /api "latest please" is not a semver range/);
});

test('a manifest missing kind and carrying an unknown field is reported with both fields', async (t) => {
  const b = brokenAt(await loadFixtures(), 'bad-manifest');
  t.like(b, { name: 'bad-manifest', version: '1.0.0' });
  t.regex(b.problem, /^plugin "bad-manifest" 1\.0\.0 in .*: plugin\.json is not a valid manifest: \/kind is required; \/colour is not a manifest field$/);
});

test('the manifest rules that depend on kind are reported in words', async (t) => {
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ kind: 'connector' }, /\/settings is required/],
    [{ kind: 'pack', settings: { type: 'object' } }, /settings are only for connectors/],
    [{ aliases: ['x'], kind: 'pack' }, /aliases are only for normalisers/],
    [{ name: 'Upper' }, /\/name must match pattern/],
    [{ version: 'v1' }, /\/version must match pattern/],
    [{ kind: 'widget' }, /\/kind must be one of normaliser, connector, pack/],
  ];
  const root = tempPlugins(t, Object.fromEntries(cases.map(([fields], i) => [`p${i}`, { manifest: manifest(fields) }])));
  const r = await loadPlugins({ dirs: [root], log: silentLogger() });
  t.deepEqual(r.loaded, []);
  cases.forEach(([, pattern], i) => t.regex(r.broken.find((b) => b.dir === path.join(root, `p${i}`))!.problem, pattern));
});

test('plugin.json that is not JSON is reported under its folder', async (t) => {
  const b = brokenAt(await loadFixtures(), 'bad-json');
  t.like(b, { name: null, version: null });
  t.regex(b.problem, /^plugin folder .*bad-json: plugin\.json is not valid JSON \(/);
});

test('an entry that throws while importing is reported and the other plugins still load', async (t) => {
  const r = await loadFixtures();
  t.regex(brokenAt(r, 'throwing-entry').problem, /plugin "throwing-entry" .*: entry "index\.ts" failed to import \(boom while loading throwing-entry\)/);
  t.deepEqual(
    r.loaded.map((l) => l.name),
    ['good-connector', 'good-normaliser', 'imports-inside', 'twin'],
  );
});

test('an entry that points outside the plugin folder is reported', async (t) => {
  t.regex(
    brokenAt(await loadFixtures(), 'escaping-entry').problem,
    /plugin "escaping-entry" .*: entry "\.\.\/\.\.\/outside\.ts" points outside the plugin folder/,
  );
});

test('an entry in a subfolder of the plugin folder is accepted', async (t) => {
  const root = tempPlugins(t, { p: { manifest: manifest({ entry: 'lib/main.mjs' }), files: { 'lib/main.mjs': NORMALISER } } });
  const r = await loadPlugins({ dirs: [root], log: silentLogger() });
  t.deepEqual(
    r.loaded.map((l) => l.name),
    ['temp'],
  );
});

test('an entry that does not exist, or has no default export, is reported', async (t) => {
  const root = tempPlugins(t, {
    missing: { manifest: manifest({ name: 'missing', entry: 'gone.mjs' }) },
    nodefault: { manifest: manifest({ name: 'nodefault' }), files: { 'index.mjs': 'export const normalise = (b) => b;\n' } },
  });
  const r = await loadPlugins({ dirs: [root], log: silentLogger() });
  t.regex(r.broken[0]!.problem, /plugin "missing" .*entry "gone\.mjs" does not exist/);
  t.regex(r.broken[1]!.problem, /plugin "nodefault" .*entry "index\.mjs" has no default export/);
});

test('a compiled host runs a TypeScript entry from the JavaScript compiled beside it, and the entry as named otherwise', async (t) => {
  // The release package runs the host compiled (host/compiled.ts), and ships its plugins so.
  const root = tempPlugins(t, {
    both: { manifest: manifest({ entry: 'index.ts' }), files: { 'index.ts': NORMALISER, 'index.js': NORMALISER } },
    tsonly: { manifest: manifest({ entry: 'index.ts' }), files: { 'index.ts': NORMALISER } },
    jsonly: { manifest: manifest({ entry: 'lib/main.mts' }), files: { 'lib/main.mjs': NORMALISER } },
  });
  const at = (folder: string) => path.join(root, folder);
  const compiled = { compiled: true, typescript: true };
  t.is(await resolveEntry(at('both'), 'index.ts', compiled), path.join(root, 'both', 'index.js'));
  t.is(await resolveEntry(at('jsonly'), 'lib/main.mts', compiled), path.join(root, 'jsonly', 'lib', 'main.mjs'), 'the package ships no .ts');
  t.is(await resolveEntry(at('tsonly'), 'index.ts', compiled), path.join(root, 'tsonly', 'index.ts'), 'a Node.js that strips types runs the TypeScript');
  t.is(await resolveEntry(at('both'), 'index.ts', { compiled: false, typescript: true }), path.join(root, 'both', 'index.ts'), 'a checkout runs what it names');
  await t.throwsAsync(resolveEntry(at('jsonly'), 'lib/main.mts', { compiled: false, typescript: true }), { message: 'entry "lib/main.mts" does not exist' });
});

test('a TypeScript entry with nothing compiled beside it is refused, saying why, where the service runs without type stripping', async (t) => {
  const root = tempPlugins(t, {
    tsonly: { manifest: manifest({ entry: 'index.ts' }), files: { 'index.ts': NORMALISER } },
    both: { manifest: manifest({ entry: 'index.ts' }), files: { 'index.ts': NORMALISER, 'index.js': NORMALISER } },
  });
  const packaged = { compiled: true, typescript: false };
  await t.throwsAsync(resolveEntry(path.join(root, 'tsonly'), 'index.ts', packaged), {
    message: /^entry "index\.ts" is TypeScript, which this service, started without type stripping .*: put its compiled index\.js beside it/,
  });
  t.is(await resolveEntry(path.join(root, 'both'), 'index.ts', packaged), path.join(root, 'both', 'index.js'));
  await t.throwsAsync(resolveEntry(path.join(root, 'tsonly'), 'gone.ts', packaged), { message: 'entry "gone.ts" does not exist' });
});

// ---- discovery and reporting

test('a missing plugins directory yields an empty registry', async (t) => {
  const r = await loadPlugins({ dirs: [path.join(tmpdir(), 'oncall-no-such-dir-7f3a')], log: silentLogger() });
  t.deepEqual(r, { loaded: [], broken: [], superseded: [] });
});

test('plugin folders are found up to three levels down and no deeper', async (t) => {
  const root = tempPlugins(t, {
    'a/b/c': { manifest: manifest({ name: 'three-down' }) },
    'a/b/x/d': { manifest: manifest({ name: 'four-down' }) },
  });
  const r = await loadPlugins({ dirs: [root], log: silentLogger() });
  t.deepEqual(
    r.loaded.map((l) => l.name),
    ['three-down'],
  );
  t.deepEqual(r.broken, []);
});

test('every broken plugin is logged as a warning naming it, and loading gives the same registry twice', async (t) => {
  const lines: string[] = [];
  const log = createLogger({ logLevel: 'info' }, { write: (l: string) => (lines.push(l), true) } as unknown as NodeJS.WritableStream);
  const r = await loadPlugins({ dirs: [FIXTURES], log });
  const warnings = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level === 40);
  t.deepEqual(warnings.map((w) => w.msg).sort(), r.broken.map((b) => b.problem).sort());
  t.is(r.broken.length, 9);
  const again = await loadFixtures();
  t.deepEqual(again.broken, r.broken);
  t.deepEqual(again.superseded, r.superseded);
  t.deepEqual(
    again.loaded.map((l) => l.dir),
    r.loaded.map((l) => l.dir),
  );
});

// ---- the host

test('the host starts and serves /health with broken plugins present, and records each in the ledger', async (t) => {
  const ta = await startApp(t, { env: { SERVICE_PLUGINS_DIR: FIXTURES } });
  t.deepEqual((await ta.call('GET', '/health', { token: null })).body, { status: 'ok' });
  const broken = ta.app.plugins.broken;
  t.deepEqual(
    broken.map((b) => path.basename(b.dir)),
    [
      'bad-json',
      'bad-manifest',
      'bad-settings',
      'escaping-entry',
      'imports-outside',
      'imports-outside-deep',
      'missing-function',
      'throwing-entry',
      'wrong-api',
    ],
  );
  t.deepEqual(
    ta.app.plugins.loaded.filter((l) => l.dir.startsWith(FIXTURES)).map((l) => l.name),
    ['good-connector', 'good-normaliser', 'imports-inside', 'twin'],
  );
  t.true(
    ta.app.plugins.loaded.some((l) => l.name === 'generic' && l.kind === 'normaliser'),
    'the built-in plugins load beside them',
  );
  const res = await ta.call('GET', '/v1/ledger?type=system.plugin_broken&order=asc&limit=100');
  t.is(res.status, 200);
  t.deepEqual(
    res.body.events.map((e: { type: string; actor: string; reason: string; data: unknown }) => [e.type, e.actor, e.reason, e.data]),
    broken.map((b) => ['system.plugin_broken', 'system', b.problem, { dir: b.dir, name: b.name, version: b.version }]),
  );
});

// Serial, so the patched append cannot reach the other tests' apps (ava runs serial tests first).
test.serial('the host still starts when a broken plugin cannot be recorded in the ledger', async (t) => {
  const append = Ledger.prototype.append;
  Ledger.prototype.append = () => Promise.reject(new AppError('ledger_unavailable'));
  let ta;
  try {
    ta = await startApp(t, { env: { SERVICE_PLUGINS_DIR: FIXTURES } });
  } finally {
    Ledger.prototype.append = append;
  }
  t.is((await ta.call('GET', '/health', { token: null })).status, 200);
  t.is(ta.app.plugins.broken.length, 9);
  t.is(ta.logs.filter((l) => l.includes('could not record a broken plugin in the ledger')).length, 9);
  t.is((await ta.call('GET', '/v1/ledger?type=system.plugin_broken')).body.events.length, 0);
});

test('without SERVICE_PLUGINS_DIR the fixtures are not loaded and nothing broken is recorded for them', async (t) => {
  const ta = await startApp(t);
  t.is((await ta.call('GET', '/health', { token: null })).status, 200);
  t.false([...ta.app.plugins.loaded, ...ta.app.plugins.broken].some((p) => p.dir.startsWith(FIXTURES)));
  const res = await ta.call('GET', '/v1/ledger?type=system.plugin_broken&limit=100');
  t.is(res.body.events.length, ta.app.plugins.broken.length);
});

// ---- the manifest schema and the contract rule

type Schema = { properties?: Record<string, Schema>; additionalProperties?: unknown; description?: unknown; items?: Schema };

/** Every object with properties forbids unknown ones, and every property says what it is. */
function schemaGaps(schema: Schema, at = ''): string[] {
  const gaps: string[] = [];
  if (schema.properties !== undefined) {
    if (schema.additionalProperties !== false) gaps.push(`${at || '/'} allows unknown fields`);
    for (const [key, sub] of Object.entries(schema.properties)) {
      if (typeof sub.description !== 'string' || sub.description.trim() === '') gaps.push(`${at}/${key} has no description`);
      gaps.push(...schemaGaps(sub, `${at}/${key}`));
    }
  }
  if (typeof schema.items === 'object') gaps.push(...schemaGaps(schema.items, `${at}/items`));
  return gaps;
}

const manifestSchema = JSON.parse(readFileSync(path.join(REPO, 'host', 'plugins', 'manifest.schema.json'), 'utf8')) as Schema;

test('the manifest schema forbids unknown fields and describes every property', (t) => {
  t.is(manifestSchema.additionalProperties, false);
  t.deepEqual(Object.keys(manifestSchema.properties!).sort(), [
    'actions',
    'aliases',
    'api',
    'description',
    'entry',
    'kind',
    'name',
    'reads',
    'settings',
    'version',
  ]);
  t.deepEqual(schemaGaps(manifestSchema), []);
});

test('the schema walk finds a property without a description and an open object', (t) => {
  const doctored: Schema = { properties: { name: {}, nested: { description: 'x', properties: { ok: { description: 'y' } } } } };
  t.deepEqual(schemaGaps(doctored), ['/ allows unknown fields', '/name has no description', '/nested allows unknown fields']);
});

/**
 * Imports in plugin code that reach into host/ other than through a type import of the contract.
 * A plugin folder's tests (its `test/` folder, which the host never loads) may import the contract
 * as a value too, for its test kit; nothing else of the host.
 */
function contractBreaches(file: string, text: string): string[] {
  const isTest = path.relative(REPO, file).split(path.sep).includes('test') && !file.startsWith(path.join(REPO, 'test') + path.sep);
  const breaches: string[] = [];
  const statement = /(^|\n)\s*(import|export)\b([^;'"]*?)\bfrom\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)|(^|\n)\s*import\s*['"]([^'"]+)['"]/g;
  for (const m of text.matchAll(statement)) {
    const spec = m[4] ?? m[5] ?? m[7]!;
    if (!spec.startsWith('.') && !path.isAbsolute(spec)) continue;
    const target = path.resolve(path.dirname(file), spec);
    if (!target.startsWith(path.join(REPO, 'host') + path.sep)) continue;
    const typeOnly = m[2] !== undefined && /^\s*type\b/.test(m[3] ?? '');
    if (target !== CONTRACT) breaches.push(`${file} imports ${spec}`);
    else if (!typeOnly && !isTest) breaches.push(`${file} imports the contract without "import type"`);
  }
  return breaches;
}

function codeFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((n) => {
    const p = path.join(dir, n);
    if (statSync(p).isDirectory()) return n === 'node_modules' ? [] : codeFiles(p);
    return /\.(ts|mts|js|mjs)$/.test(n) ? [p] : [];
  });
}

test('plugin code imports nothing from host/ but a type import of the plugin contract', (t) => {
  const files = ['plugins', 'packs', 'test/fixtures/plugins'].flatMap((d) => codeFiles(path.join(REPO, d)));
  t.true(files.length >= 8);
  t.deepEqual(
    files.flatMap((f) => contractBreaches(f, readFileSync(f, 'utf8'))),
    [],
  );
});

test('the contract rule flags plugin code that reaches into host internals or imports the contract as a value', (t) => {
  const file = path.join(REPO, 'plugins', 'normalisers', 'x', 'index.ts');
  t.deepEqual(contractBreaches(file, "import type { NormaliserPlugin } from '../../../host/plugins/contract.ts';\n"), []);
  t.is(contractBreaches(file, "import { Ledger } from '../../../host/ledger/ledger.service.ts';\n").length, 1);
  t.is(contractBreaches(file, "const m = await import('../../../host/log.ts');\n").length, 1);
  t.is(contractBreaches(file, "import { PluginKind } from '../../../host/plugins/contract.ts';\n").length, 1);
  // A plugin's own test uses the contract's test kit; it still reaches nothing else of the host.
  const own = path.join(REPO, 'plugins', 'connectors', 'x', 'test', 'x.test.ts');
  t.deepEqual(contractBreaches(own, "import { connectorCases } from '../../../../host/plugins/contract.ts';\n"), []);
  t.is(contractBreaches(own, "import { pluginHttp } from '../../../../host/plugins/http-client.ts';\n").length, 1);
});
