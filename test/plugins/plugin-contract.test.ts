// The plugin contract suite: one set of checks over every plugin folder shipped in plugins/,
// packs/ and examples/. A new plugin gets its tests by adding its folder (and, for a
// normaliser, `fixtures/<case>.json` beside `<case>.expected.json`).
import test from 'ava';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';
import { ConnectorKinds } from '../../host/connectors/kinds.ts';
import { getAt, maskSecrets, setAt, splitSecrets } from '../../host/connectors/secrets.ts';
import { AppError } from '../../host/errors.ts';
import { Normalisers, type Signal } from '../../host/intake/normalise.ts';
import { silentLogger } from '../../host/log.ts';
import { MANIFEST_FILE, validateManifest } from '../../host/plugins/checks.ts';
import type { PluginManifest } from '../../host/plugins/contract.ts';
import { loadPlugins, type PluginRegistry } from '../../host/plugins/loader.ts';
import { checkCase, connectorCases, packScenarios } from '../../host/plugins/contract.ts';
import { PACKS_DIR, scenarioTable, withTable } from '../../host/investigation/scenario-table.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const ROOTS = ['plugins', 'packs', 'examples'].map((r) => path.join(REPO, r));

/** Plugin folders (holding plugin.json) up to three levels below each root, as the loader finds them. */
function pluginFolders(): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number): void => {
    if (depth > 0 && existsSync(path.join(dir, MANIFEST_FILE))) return void out.push(dir);
    if (depth === 3) return;
    for (const d of readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !d.name.startsWith('.') && d.name !== 'node_modules')
      .sort((a, b) => (a.name < b.name ? -1 : 1)))
      walk(path.join(dir, d.name), depth + 1);
  };
  for (const r of ROOTS) if (existsSync(r)) walk(r, 0);
  return out;
}

const folders = pluginFolders();
const registries = new Map<string, PluginRegistry>();
for (const r of ROOTS) registries.set(r, await loadPlugins({ dirs: [r], log: silentLogger() }));
const registryOf = (dir: string) => registries.get(ROOTS.find((r) => dir.startsWith(r + path.sep))!)!;
const shown = (dir: string) => path.relative(REPO, dir).split(path.sep).join('/');

/** Whether a plugin's `api` range only accepts hosts with the action contract (plugin API 1.2). */
const semverAtLeast12 = (range: string): boolean => semver.gte(semver.minVersion(range) ?? '0.0.0', '1.2.0');

/** A property name that says it holds a credential. */
const SECRET_NAME = /(password|passphrase|secret|token|credential|(^|_)key$)/i;

/** Each pack's causes and scenarios through the plugin test kit; a pack that does not load has none (and fails below). */
const noPack = { causes: [], scenarios: [], unknownCauses: [] } satisfies Awaited<ReturnType<typeof packScenarios>>;
const packs = new Map(
  await Promise.all(
    folders.map(
      async (dir) =>
        [
          dir,
          existsSync(path.join(dir, 'scenarios')) || dir.startsWith(path.join(REPO, 'packs')) ? await packScenarios(dir).catch(() => noPack) : noPack,
        ] as const,
    ),
  ),
);

test('the suite finds the shipped plugins', (t) => {
  const names = folders.map(shown);
  for (const expected of ['plugins/connectors/http', 'plugins/connectors/alertmanager', 'plugins/normalisers/generic', 'examples/vendor-connector'])
    t.true(names.includes(expected), expected);
});

for (const dir of folders) {
  const name = shown(dir);
  const manifest = JSON.parse(readFileSync(path.join(dir, MANIFEST_FILE), 'utf8')) as PluginManifest;

  test(`${name}: plugin.json is valid against manifest.schema.json`, (t) => {
    t.notThrows(() => validateManifest(manifest));
  });

  test(`${name}: the loader accepts it (imports stay in its folder) and uses it`, (t) => {
    const r = registryOf(dir);
    t.deepEqual(
      r.broken.filter((b) => b.dir === dir).map((b) => b.problem),
      [],
    );
    t.true(
      r.loaded.some((l) => l.dir === dir),
      'loaded, not superseded',
    );
  });

  if (manifest.kind === 'connector') {
    test(`${name}: every credential in its settings is writeOnly, and the catalogue and views mask it`, (t) => {
      const props = (manifest.settings as { properties?: Record<string, { writeOnly?: boolean }> }).properties ?? {};
      const credentials = Object.keys(props).filter((k) => SECRET_NAME.test(k));
      for (const k of credentials) t.is(props[k]!.writeOnly, true, `settings.${k} holds a credential and must be "writeOnly": true`);
      const loaded = registryOf(dir).loaded.find((l) => l.dir === dir)!;
      const kinds = new ConnectorKinds([loaded]);
      const entry = kinds.catalogue().find((c) => c.kind === manifest.name)!;
      t.deepEqual(entry.secrets.filter((s) => credentials.includes(s)).sort(), [...credentials].sort(), 'the catalogue lists them as secrets');
      const kind = kinds.get(manifest.name)!;
      const example: Record<string, unknown> = {};
      for (const p of kind.pointers) setAt(example, p, `the-secret-${p}-0123456789`);
      const masked = maskSecrets(splitSecrets(example, kind.pointers).plain, kind.pointers, () => true);
      for (const p of kind.pointers) t.deepEqual(getAt(masked, p), { set: true });
      t.false(JSON.stringify(masked).includes('the-secret-'), 'no secret value is shown');
    });

    test(`${name}: its action kinds are usable as declared, and it acts on nothing it does not declare`, (t) => {
      const loaded = registryOf(dir).loaded.find((l) => l.dir === dir)!;
      const plugin = loaded.plugin as Record<string, unknown>;
      const kind = new ConnectorKinds([loaded]).get(manifest.name)!;
      const declared = manifest.actions ?? {};
      if (Object.keys(declared).length === 0) {
        for (const m of ['rehearse', 'act', 'undo']) t.is(plugin[m], undefined, `${m}() without any action declared in plugin.json`);
        return;
      }
      t.true(semverAtLeast12(manifest.api), `api ${manifest.api} must require plugin API 1.2 (actions)`);
      for (const [action, d] of Object.entries(declared)) {
        const k = kind.actions.get(action)!;
        t.is(k.problem, null, `${action}: ${k.problem}`);
        t.is(k.declaration.rehearsable, d.rehearsable, `${action}: declared rehearsable ${d.rehearsable}, rehearse() ${typeof plugin.rehearse}`);
        t.is(k.declaration.reversible, d.reversible, `${action}: declared reversible ${d.reversible}, undo() ${typeof plugin.undo}`);
        t.is((d.params as { additionalProperties?: unknown }).additionalProperties, false, `${action}: params take no unknown field`);
        t.is(k.validate({ surely_not_a_param: 1 }) === null, false, `${action}: params are checked`);
      }
    });
  }

  if (manifest.kind === 'normaliser' && existsSync(path.join(dir, 'fixtures'))) {
    const loaded = registryOf(dir).loaded.filter((l) => l.dir === dir);
    const normalisers = new Normalisers(loaded);
    const fixtures = readdirSync(path.join(dir, 'fixtures'))
      .filter((f) => f.endsWith('.json') && !f.endsWith('.expected.json'))
      .sort();
    test(`${name}: has fixtures, each with its expected file`, (t) => {
      t.true(fixtures.length > 0);
      for (const f of fixtures)
        t.true(existsSync(path.join(dir, 'fixtures', f.replace(/\.json$/, '.expected.json'))), `${f} has ${f.replace(/\.json$/, '.expected.json')}`);
    });
    for (const f of fixtures) {
      test(`${name}: fixtures/${f} normalises to its expected file`, (t) => {
        const expected = JSON.parse(readFileSync(path.join(dir, 'fixtures', f.replace(/\.json$/, '.expected.json')), 'utf8')) as {
          source: string;
          signals?: Signal[];
          error?: string;
        };
        let got: Signal[] | { error: string };
        try {
          got = normalisers.normalise(expected.source, JSON.parse(readFileSync(path.join(dir, 'fixtures', f), 'utf8')));
        } catch (e) {
          if (!(e instanceof AppError) && !(e instanceof SyntaxError)) throw e;
          got = { error: e instanceof AppError ? e.code : 'invalid_json' };
        }
        if (expected.error !== undefined) t.deepEqual(got, { error: expected.error });
        else t.deepEqual(got, expected.signals);
      });
    }
  }

  if (manifest.kind === 'connector') {
    // The plugin test kit's connector cases (fixtures/*.json), as the connector's own test runs them.
    for (const c of connectorCases(dir)) {
      test(`${name}: ${c.file} (${c.name}) answers what it recorded`, (t) => checkCase(t, c));
    }
  }

  if (manifest.kind === 'connector' && name.startsWith('plugins/connectors/')) {
    // A shipped connector's folder can be copied and tested alone (issue 25): it carries its own
    // test, and one that speaks HTTP (ctx.http) carries recorded cases of each call it offers
    // that changes or tells something, each succeeding and failing.
    test(`${name}: carries its own test, and recorded cases when it speaks HTTP`, (t) => {
      const own = existsSync(path.join(dir, 'test')) ? readdirSync(path.join(dir, 'test')).filter((f) => f.endsWith('.test.ts')) : [];
      t.true(own.length > 0, 'test/<kind>.test.ts');
      const code = readdirSync(dir).filter((f) => f.endsWith('.ts'));
      if (!code.some((f) => readFileSync(path.join(dir, f), 'utf8').includes('ctx.http'))) return;
      const plugin = registryOf(dir).loaded.find((l) => l.dir === dir)!.plugin as Record<string, unknown>;
      const cases = existsSync(path.join(dir, 'fixtures'))
        ? readdirSync(path.join(dir, 'fixtures'))
            .filter((f) => f.endsWith('.json'))
            .map((f) => JSON.parse(readFileSync(path.join(dir, 'fixtures', f), 'utf8')) as { call: string; expect: { ok?: unknown } | null })
        : [];
      const calls = [['test'], ['notify'], ['rehearse', 'act']].filter((c) => c.some((m) => typeof plugin[m] === 'function'));
      for (const c of calls)
        for (const ok of [true, false])
          t.true(
            cases.some((k) => c.includes(k.call) && k.expect?.ok === ok),
            `a recorded ${c.join(' or ')} case answering ok: ${ok}`,
          );
    });
  }

  if (manifest.kind === 'pack') {
    // The plugin test kit's replay (host/plugins/testkit.ts), as a pack's own test runs it.
    const pack = packs.get(dir)!;
    test(`${name}: every cause ships scenarios: one where it holds, one where it is ruled out, and a near miss`, (t) => {
      t.true(pack.causes.length > 0, 'the pack loads and declares causes');
      for (const c of pack.causes) {
        const list = pack.scenarios.filter((s) => s.cause.id === c.id).map((s) => s.scenario);
        t.true(
          list.some((s) => s.expect.verdict === 'holds'),
          `${c.id} has a scenario where it holds`,
        );
        t.true(
          list.some((s) => s.expect.verdict === 'ruled_out'),
          `${c.id} has a scenario where it is ruled out`,
        );
        t.true(
          list.some((s) => /^near miss/i.test(s.name)),
          `${c.id} has a scenario named "near miss: ..."`,
        );
      }
      for (const id of pack.unknownCauses) t.fail(`scenarios name cause ${id}, which the pack does not declare`);
    });
    for (const { cause: c, scenario: s, replay } of pack.scenarios) {
      test(`${name}: ${c.id} scenario "${s.name}" answers ${s.expect.verdict}`, async (t) => {
        const v = await replay();
        t.is(v.verdict, s.expect.verdict, v.reason);
        if (s.expect.obstacle !== undefined) t.is(v.obstacle, s.expect.obstacle);
        if (s.expect.reason !== undefined) t.true(v.reason.includes(s.expect.reason), `the reason says "${s.expect.reason}": ${v.reason}`);
        if (v.verdict !== 'unknown') t.true(v.evidence.length > 0, 'a holds or ruled_out verdict carries evidence');
        t.true(v.reason.length > 0);
      });
    }
  }
}

test("the alertmanager connector maps alerts with an identical copy of the normaliser's map.ts", (t) => {
  const connector = readFileSync(path.join(REPO, 'plugins/connectors/alertmanager/map.ts'), 'utf8');
  const normaliser = readFileSync(path.join(REPO, 'plugins/normalisers/alertmanager/map.ts'), 'utf8');
  t.is(connector, normaliser, 'change both copies together');
});

test('docs/packs.md publishes the verdict of every shipped scenario as the code reaches it (npm run docs:packs)', async (t) => {
  const doc = readFileSync(path.join(REPO, 'docs/packs.md'), 'utf8');
  t.is(doc, withTable(doc, await scenarioTable([PACKS_DIR])), 'run npm run docs:packs and commit docs/packs.md');
});
