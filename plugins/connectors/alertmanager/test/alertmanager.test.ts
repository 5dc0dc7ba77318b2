// The alertmanager connector's own test, beside it: its recorded cases (fixtures/*.json) through
// the plugin test kit: test, and the silence action rehearsed and undone (act stamps the time it
// is made, so it is tested live). It imports nothing of the host but the contract module. Its
// live tests against a real Alertmanager are test/connectors/alertmanager-actions.test.ts,
// test/connectors/polling.test.ts and test/acting/alertmanager-e2e.test.ts.
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { checkCase, connectorCases } from '../../../../host/plugins/contract.ts';

const DIR = fileURLToPath(new URL('..', import.meta.url));

test('the connector has recorded cases for test, rehearse and undo, each succeeding and failing', (t) => {
  const files = connectorCases(DIR).map((c) => c.file);
  for (const call of ['test', 'rehearse', 'undo']) t.true(files.filter((f) => f.startsWith(`fixtures/${call}-`)).length >= 2, call);
});

for (const c of connectorCases(DIR)) {
  test(`${c.file}: ${c.name}`, (t) => checkCase(t, c));
}
