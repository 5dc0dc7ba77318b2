// The pagerduty connector's own test, beside it: its recorded cases (fixtures/*.json) through the
// plugin test kit, against a recorded Events API reached through the `url` setting (the address
// defaults to PagerDuty's, and is a setting for EU accounts and relays). It imports nothing of
// the host but the contract module, so the folder can be copied and tested alone.
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { checkCase, connectorCases } from '../../../../host/plugins/contract.ts';

const DIR = fileURLToPath(new URL('..', import.meta.url));

for (const c of connectorCases(DIR)) test(`${c.file}: ${c.name}`, (t) => checkCase(t, c));

test('the connector has recorded cases for test and notify, each succeeding and failing', (t) => {
  const files = connectorCases(DIR).map((c) => c.file);
  for (const call of ['test', 'notify']) t.true(files.filter((f) => f.startsWith(`fixtures/${call}-`)).length >= 2, call);
});
