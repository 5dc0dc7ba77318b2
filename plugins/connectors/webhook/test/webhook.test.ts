// The webhook connector's own test, beside it: its recorded cases (fixtures/*.json) through the
// plugin test kit, and what a recording cannot show. It imports nothing of the host but the
// contract module, so the folder can be copied and tested alone against a checkout of the host.
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { checkCase, connectorCases, connectorContext, loadPluginFolder, recordedServer } from '../../../../host/plugins/contract.ts';
import type { ConnectorPluginWithCapabilities, NotifyMessage } from '../../../../host/plugins/contract.ts';

const DIR = fileURLToPath(new URL('..', import.meta.url));

for (const c of connectorCases(DIR)) test(`${c.file}: ${c.name}`, (t) => checkCase(t, c));

test('the connector has recorded cases for test and notify, each succeeding and failing', (t) => {
  const files = connectorCases(DIR).map((c) => c.file);
  for (const call of ['test', 'notify']) t.true(files.filter((f) => f.startsWith(`fixtures/${call}-`)).length >= 2, call);
});

test('notify to a URL where nothing listens is a failure (the host retries it), naming the address without the secret', async (t) => {
  const { plugin } = await loadPluginFolder(DIR);
  const server = await recordedServer([]);
  await server.close();
  const secret = 'whsec-not-answered-0123456789';
  const message: NotifyMessage = {
    event: 'incident.opened',
    episode: { id: 'e1', service: 'checkout', severity: 'warning', t_open: '2026-11-24T10:31:00.000Z', alerts: ['A'], outcome: null, url: null },
    sent_at: '2026-11-24T10:31:00.050Z',
  };
  const r = await (plugin as ConnectorPluginWithCapabilities).notify!(connectorContext({ url: `${server.url}/hooks`, secret }, { secrets: [secret] }), message);
  t.deepEqual(r, { ok: false, problem: `cannot connect to ${server.url.slice('http://'.length)}: connection refused` });
});
