import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { AppError } from '../../host/errors.ts';
import { flattenLabels, hashFingerprint, Normalisers, type Signal } from '../../host/intake/normalise.ts';
import { silentLogger } from '../../host/log.ts';
import type { NormaliserPlugin } from '../../host/plugins/contract.ts';
import { loadPlugins, type LoadedPlugin } from '../../host/plugins/loader.ts';

/**
 * The normaliser contract test: every plugin under plugins/normalisers/ keeps the real payloads
 * it reads in `fixtures/<case>.json`, each beside `<case>.expected.json`:
 *   {"source": "<the word pushed to /v1/alerts/<source>>", "signals": [...]}   or
 *   {"source": "...", "error": "unreadable_alert" | "invalid_json"}
 * with `"auto": false` when `auto` need not recognise the body. A new normaliser gets its tests
 * by adding fixtures.
 */
const ROOT = fileURLToPath(new URL('../../plugins/normalisers/', import.meta.url));

interface Expected {
  source: string;
  signals?: Signal[];
  error?: 'unreadable_alert' | 'invalid_json';
  auto?: boolean;
}

const registry = await loadPlugins({ dirs: [ROOT], log: silentLogger() });
const normalisers = new Normalisers(registry.loaded);

test('every normaliser plugin loads', (t) => {
  t.deepEqual(registry.broken, []);
});

function cases(): Array<{ plugin: string; file: string }> {
  const out: Array<{ plugin: string; file: string }> = [];
  if (!existsSync(ROOT)) return out;
  for (const plugin of readdirSync(ROOT, { withFileTypes: true }).filter((d) => d.isDirectory())) {
    const dir = path.join(ROOT, plugin.name, 'fixtures');
    let files: string[] = [];
    try {
      files = readdirSync(dir);
    } catch {
      continue;
    }
    for (const f of files.filter((f) => !f.endsWith('.expected.json') && !f.endsWith('.md')).sort()) out.push({ plugin: plugin.name, file: path.join(dir, f) });
  }
  return out;
}

function normaliseOrError(source: string, text: string): Signal[] | { error: string } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { error: 'invalid_json' };
  }
  try {
    return normalisers.normalise(source, body);
  } catch (e) {
    if (e instanceof AppError) return { error: e.code };
    throw e;
  }
}

for (const c of cases()) {
  const name = `${c.plugin}/${path.basename(c.file)}`;
  const expectedFile = c.file.replace(/\.[a-z]+$/, '.expected.json');
  // Each fixture normalising to its expected file is checked by test/plugins/plugin-contract.test.ts,
  // with every other plugin; here: what auto-detection makes of it.
  test(`${name} is recognised by auto as a ${c.plugin} body`, (t) => {
    const expected = JSON.parse(readFileSync(expectedFile, 'utf8')) as Expected;
    const got = normaliseOrError('auto', readFileSync(c.file, 'utf8'));
    // A body no normaliser can read is refused the same way whichever one is asked.
    if (expected.error !== undefined) return t.deepEqual(got, { error: expected.error });
    const asPlugin = expected.signals!.map((s) => ({ ...s, labels: { ...s.labels, siem: c.plugin } }));
    // A body auto must not claim for this plugin (it looks like another tool's): it is read,
    // but not as this plugin's alerts.
    if (expected.auto === false) {
      t.false('error' in got, 'auto still reads it');
      return t.notDeepEqual(got, asPlugin);
    }
    t.deepEqual(got, asPlugin);
  });
}

// The host's own part, with a stand-in normaliser.
const stub = (alerts: unknown): LoadedPlugin => ({
  name: 'stub',
  version: '1.0.0',
  kind: 'normaliser',
  dir: '/nowhere',
  manifest: { name: 'stub', version: '1.0.0', kind: 'normaliser', api: '^1.0.0', entry: 'x', aliases: ['stubby'] },
  plugin: { normalise: () => alerts, detect: () => true } satisfies Pick<NormaliserPlugin, 'detect'> & { normalise: () => unknown },
});
const alert = {
  name: 'Disk full',
  severity: 'critical',
  status: 'firing',
  service: 'db',
  labels: { host: 'a', n: 3, ok: true, nested: { x: 'y' }, list: [1, 'b'], gone: null, siem: 'forged' },
  summary: '',
  id: null,
};

test('labels are flattened to strings with dotted keys, and siem is the source word, not the plugin’s', (t) => {
  const [s] = new Normalisers([stub([alert])]).normalise('stubby', {});
  t.deepEqual(s!.labels, { host: 'a', n: '3', ok: 'true', 'nested.x': 'y', list: '1,b', siem: 'stubby' });
  t.deepEqual(flattenLabels({ a: { b: { c: 1 } } }), { 'a.b.c': '1' });
});

test('without a tool id the fingerprint hashes the normaliser, the name, the identifying labels and the service only', (t) => {
  const n = new Normalisers([stub([{ ...alert, labels: { host: 'a', value: '97%' }, identity: ['host'] }])]);
  const [a] = n.normalise('stub', {});
  t.is(a!.fingerprint, hashFingerprint('stub', 'Disk full', { host: 'a' }, 'db'));
  const [other] = new Normalisers([stub([{ ...alert, service: 'web', labels: { host: 'a', value: '97%' }, identity: ['host'] }])]).normalise('stub', {});
  t.not(a!.fingerprint, other!.fingerprint, 'the same alert for another service is another alert');
  const [b] = new Normalisers([stub([{ ...alert, labels: { host: 'a', value: '12%' }, identity: ['host'] }])]).normalise('stub', {});
  t.is(a!.fingerprint, b!.fingerprint, 'a volatile value does not change it');
  const [c] = new Normalisers([stub([{ ...alert, labels: { host: 'b' } }])]).normalise('stub', {});
  t.not(a!.fingerprint, c!.fingerprint);
});

test('the tool id is the fingerprint when there is one', (t) => {
  const [s] = new Normalisers([stub([{ ...alert, id: 'abc123' }])]).normalise('stub', {});
  t.is(s!.fingerprint, 'abc123');
});

test('a body a normaliser cannot read, or reads into a bad alert, is refused whole', (t) => {
  for (const alerts of [null, [], 'x', [alert, { ...alert, severity: 'loud' }], [{ ...alert, name: '' }]]) {
    t.throws(() => new Normalisers([stub(alerts)]).normalise('stub', {}), { instanceOf: AppError, message: /./ }, JSON.stringify(alerts));
  }
  t.throws(() => new Normalisers([]).normalise('nagios', {}), { instanceOf: AppError });
});

test('the host clips long names and services for every normaliser, and hashes an id too long to keep', (t) => {
  const longId = 'i'.repeat(600);
  const [s] = new Normalisers([stub([{ ...alert, name: 'n'.repeat(800), service: 's'.repeat(300), id: longId }])]).normalise('stub', {});
  t.is(s!.name.length, 500);
  t.is(s!.service!.length, 200);
  t.is(s!.id!.length, 500);
  t.regex(s!.fingerprint, /^[0-9a-f]{64}$/);
  const [again] = new Normalisers([stub([{ ...alert, id: longId }])]).normalise('stub', {});
  t.is(again!.fingerprint, s!.fingerprint, 'still stable');
});
