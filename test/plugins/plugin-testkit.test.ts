// The plugin test kit itself (host/plugins/testkit.ts, offered through the contract module):
// what the contract suite and plugin folders' own tests rely on. See docs/plugins.md.
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { connectorContext, loadPluginFolder, packScenarios, recordedServer } from '../../host/plugins/contract.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/plugins/', import.meta.url));
const PACKS = fileURLToPath(new URL('../../packs/', import.meta.url));

test('loadPluginFolder loads a folder through the host loader, and throws the loader problem for a broken one', async (t) => {
  const good = await loadPluginFolder(FIXTURES + 'good-connector');
  t.like(good, { name: 'good-connector', kind: 'connector', version: '2.1.0' });
  t.is(typeof (good.plugin as { test: unknown }).test, 'function');
  await t.throwsAsync(loadPluginFolder(FIXTURES + 'imports-outside'), {
    message: /imports "\.\.\/good-normaliser\/index\.ts", which is outside the plugin folder/,
  });
  await t.throwsAsync(loadPluginFolder(FIXTURES + 'no-such-folder'), { message: /no plugin folder \(plugin\.json\) at / });
});

test('recordedServer answers the recorded answer of a method and path (200 unless it says), 404 otherwise, and keeps the requests without credentials', async (t) => {
  const s = await recordedServer([
    { path: '/ok', body: { fine: true } },
    { method: 'POST', path: '/made', status: 201, body: 'created', headers: { 'x-id': '7' } },
  ]);
  t.teardown(() => s.close());
  const ok = await fetch(`${s.url}/ok?a=1`, { headers: { authorization: 'Bearer the-token-0123456789' } });
  t.is(ok.status, 200);
  t.deepEqual(await ok.json(), { fine: true });
  const made = await fetch(`${s.url}/made`, { method: 'POST' });
  t.is(made.status, 201);
  t.is(made.headers.get('x-id'), '7');
  t.is(await made.text(), 'created');
  t.is((await fetch(`${s.url}/made`)).status, 404, 'the method is compared too');
  t.deepEqual(s.requests, [
    { method: 'GET', path: '/ok', query: { a: '1' }, auth: 'Bearer' },
    { method: 'POST', path: '/made', query: {}, auth: null },
    { method: 'GET', path: '/made', query: {}, auth: null },
  ]);
  t.false(JSON.stringify(s.requests).includes('the-token'));
});

test('connectorContext is the host context: its HTTP client words a failure for a person, and the log keeps its lines', async (t) => {
  const s = await recordedServer([]);
  await s.close();
  const ctx = connectorContext({ url: s.url });
  const r = await ctx.http.request({ url: `${s.url}/api` });
  t.false(r.ok);
  t.regex((r as { problem: string }).problem, /^cannot connect to 127\.0\.0\.1:\d+: connection refused$/);
  ctx.log.info('read', { n: 1 });
  t.deepEqual(ctx.lines, ['read {"n":1}']);
});

test('packScenarios gives each cause of a shipped pack with its scenarios, and replay reaches the verdict recorded', async (t) => {
  const { causes, scenarios, unknownCauses } = await packScenarios(PACKS + 'http');
  t.deepEqual(
    causes.map((c) => c.id),
    ['http/endpoint-down'],
  );
  t.deepEqual(unknownCauses, []);
  t.true(scenarios.length >= 3);
  for (const s of scenarios) t.is((await s.replay()).verdict, s.scenario.expect.verdict, s.scenario.name);
});
