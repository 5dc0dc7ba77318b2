// The alertmanager connector's own test, beside it: its recorded cases (fixtures/*.json) through
// the plugin test kit. It imports nothing of the host but the contract module. Its live tests
// against a real Alertmanager are test/alertmanager-*.test.ts.
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { checkCase, connectorCases } from '../../../../host/plugins/contract.ts';

const DIR = fileURLToPath(new URL('..', import.meta.url));

test('the connector has recorded cases', (t) => {
  t.true(connectorCases(DIR).length >= 2);
});

for (const c of connectorCases(DIR)) {
  test(`${c.file}: ${c.name}`, (t) => checkCase(t, c));
}
