import test from 'ava';
import { packLibrary, pluginLibrary } from '../../host/plugins/lib/index.ts';
import { connectorContext } from '../../host/plugins/contract.ts';
import { PLUGIN_API_VERSION } from '../../host/version.ts';

test('ctx.lib.text.cut: at most max units and an ellipsis, never half a surrogate pair, lone surrogates made whole', (t) => {
  const { cut } = pluginLibrary.text;
  t.is(cut('short', 10), 'short');
  t.is(cut('abcdef', 3), 'abc…');
  // '😀' is two UTF-16 units: cutting between them would leave a lone high surrogate.
  t.is(cut('ab😀cd', 3), 'ab…');
  t.is(cut('ab😀cd', 4), 'ab😀…');
  t.is(cut('a\ud800b', 10), 'a\ufffdb');
  t.true(cut('x😀'.repeat(50), 7).isWellFormed());
});

test('ctx.lib.matchers: the host parser (dotted names, RE2 checked) and matches(), also of matchers a plugin makes itself', (t) => {
  const { parse, matches } = pluginLibrary.matchers;
  const ok = parse('kubernetes.namespace="pay", job=~"api|web"');
  t.true(ok.ok);
  if (!ok.ok) return;
  t.deepEqual(
    ok.matchers.map(({ label, op, value }) => ({ label, op, value })),
    [
      { label: 'kubernetes.namespace', op: '=', value: 'pay' },
      { label: 'job', op: '=~', value: 'api|web' },
    ],
  );
  t.true(matches(ok.matchers, { 'kubernetes.namespace': 'pay', job: 'web' }));
  t.false(matches(ok.matchers, { 'kubernetes.namespace': 'pay', job: 'webx' }), 'an expression matches the whole value');
  t.false(parse('a=~"(a"').ok);
  t.false(parse('env!="dev"').ok, 'no matcher that selects');
  // A matcher built by hand (no compiled expression) is compiled when matched.
  t.true(matches([{ label: 'job', op: '=~', value: 'pay.*' }], { job: 'payments' }));
  t.true(matches([{ label: 'job', op: '!~', value: 'pay.*' }], { job: 'orders' }));
});

test('every context carries the library of this plugin API version: packs with their Prometheus helpers, connectors through the test kit as from the host', (t) => {
  t.is(pluginLibrary.version, PLUGIN_API_VERSION);
  t.is(packLibrary.version, PLUGIN_API_VERSION);
  t.is(packLibrary.text, pluginLibrary.text);
  t.is(packLibrary.matchers, pluginLibrary.matchers);
  t.is(typeof packLibrary.prometheus.place, 'function');
  t.is(connectorContext({}).lib, pluginLibrary);
  t.true(Object.isFrozen(pluginLibrary) && Object.isFrozen(pluginLibrary.text) && Object.isFrozen(packLibrary));
});
