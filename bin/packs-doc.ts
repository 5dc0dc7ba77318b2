// Rewrites the scenario table of docs/packs.md by replaying every shipped pack's scenarios.
import { readFileSync, writeFileSync } from 'node:fs';
import { PACKS_DIR, scenarioTable, withTable } from '../host/investigation/scenario-table.ts';

const file = new URL('../docs/packs.md', import.meta.url);
writeFileSync(file, withTable(readFileSync(file, 'utf8'), await scenarioTable([PACKS_DIR])));
console.log('docs/packs.md: scenario table written');
