// The README's first start (issue 22, item 14): every token a command uses is defined before it,
// the ingest token is set before the first start, and L1's approvers are said and shown.
import { readFileSync } from 'node:fs';
import test from 'ava';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const firstStart = readme.slice(readme.indexOf('## First start'), readme.indexOf('## How alerts get in'));

test('the first start defines $ADMIN_TOKEN before any command uses it, and sets the ingest token before the first start', (t) => {
  const defined = readme.indexOf('export ADMIN_TOKEN=');
  t.true(defined > 0, 'ADMIN_TOKEN is defined');
  t.true(defined < readme.indexOf('$ADMIN_TOKEN'), 'before its first use');
  t.regex(firstStart, /export SERVICE_ADMIN_TOKEN=\$ADMIN_TOKEN/);
  const ingest = firstStart.indexOf('SERVICE_INGEST_TOKEN=');
  t.true(ingest > 0 && ingest < firstStart.indexOf('npm start'), 'the ingest token is set before the first npm start');
});

test('the first start says L1 needs two approvals besides the requester, and how to add the people who give them', (t) => {
  t.regex(firstStart, /two approvals from owners or admins other than the person who asked/);
  t.regex(firstStart, /POST localhost:8700\/v1\/people[^\n]*\n[^\n]*"role\\?":\\?"admin/);
  t.regex(firstStart, /v1\/estate\/overrides[\s\S]*"approvers":\[/);
  t.regex(firstStart, /POST localhost:8700\/v1\/autonomy[\s\S]*"level":"L1"/);
});
