// The prometheus connector's own test, beside it: its recorded cases (fixtures/*.json) through
// the plugin test kit, and what a recording cannot show. It imports nothing of the host but the
// contract module, so the folder can be copied and tested alone against a checkout of the host.
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { checkCase, connectorCases, connectorContext, loadPluginFolder, recordedServer } from '../../../../host/plugins/contract.ts';

const DIR = fileURLToPath(new URL('..', import.meta.url));

for (const c of connectorCases(DIR)) {
  test(`${c.file}: ${c.name}`, (t) => checkCase(t, c));
}

test('the connector has recorded cases for test and query', (t) => {
  const calls = connectorCases(DIR).map((c) => c.file);
  t.true(calls.some((f) => f.startsWith('fixtures/test-')));
  t.true(calls.some((f) => f.startsWith('fixtures/query-')));
});

test('range refuses a step that is not a positive number of seconds without asking Prometheus', async (t) => {
  const { plugin } = await loadPluginFolder(DIR);
  const server = await recordedServer([]);
  t.teardown(() => server.close());
  const range = (plugin as { range: (ctx: unknown, r: unknown) => Promise<unknown> }).range;
  const r = await range(connectorContext({ url: server.url }), { query: 'up', start: '2026-11-24T08:00:00Z', end: '2026-11-24T09:00:00Z', step_s: 0 });
  t.deepEqual(r, { ok: false, problem: 'step_s must be a positive number of seconds', data: null });
  t.deepEqual(server.requests, []);
});
