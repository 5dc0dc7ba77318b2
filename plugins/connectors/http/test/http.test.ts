// The http connector's own test, beside it: its recorded cases (fixtures/*.json) through the
// plugin test kit: test and query, and the runbook action acted and rehearsed. It imports nothing
// of the host but the contract module, so the folder can be copied and tested alone against a
// checkout of the host. The host-side suites (test/connectors/) test it through the API.
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { checkCase, connectorCases } from '../../../../host/plugins/contract.ts';

const DIR = fileURLToPath(new URL('..', import.meta.url));

for (const c of connectorCases(DIR)) test(`${c.file}: ${c.name}`, (t) => checkCase(t, c));

test('the connector has recorded cases for test, query, act and rehearse, each succeeding and failing', (t) => {
  const files = connectorCases(DIR).map((c) => c.file);
  for (const call of ['test', 'query', 'act', 'rehearse']) t.true(files.filter((f) => f.startsWith(`fixtures/${call}-`)).length >= 2, call);
});
