// `oncall digest` (issue 16): the same digest as GET /v1/digest, built in the CLI's process on
// the service database; Markdown by default, --json for the data; --days checked.
import test from 'ava';
import { TestClock } from '../../host/clock.ts';
import { json, oncall } from '../helpers/cli.ts';
import { seedDay, seededApp } from '../helpers/digest-seed.ts';

const FIGURES = ['episodes', 'times', 'actions', 'approvals', 'governance', 'noisiest_alerts', 'unplaced_alerts', 'study', 'connectors_with_problems'] as const;

test('oncall digest prints the Markdown, and --json the same figures as GET /v1/digest', async (t) => {
  t.timeout(120_000);
  // The CLI runs on the real clock: the seeded day ends a little before now.
  const { ta } = await seededApp(t, { clock: new TestClock(new Date(Date.now() - 2 * 3_600_000).toISOString()) });
  await seedDay(ta);
  const api = (await ta.call('GET', '/v1/digest?days=7')).body;
  t.is(api.episodes.opened, 3);

  const md = await oncall(['digest'], ta.env);
  t.is(md.code, 0, md.stderr);
  t.true(md.stdout.startsWith('# Digest of the last day\n'), md.stdout);
  t.true(md.stdout.includes('- Opened: 3 (mitigated 1, escalated 2)'));
  t.true(md.stdout.includes('| \\<img src=x onerror=alert(1)\\> | generic | 3 | 1 |'));
  t.true(md.stdout.includes('- Verifies (checked '));
  t.is((await oncall(['digest', '--markdown', '--days', '7'], ta.env)).stdout.split('\n')[0], '# Digest of the last 7 days');

  const res = await oncall(['digest', '--days', '7', '--json'], ta.env);
  t.is(res.code, 0, res.stderr);
  const cli = json(res);
  t.is(cli.days, 7);
  for (const k of FIGURES) t.deepEqual(cli[k], api[k], k);
  t.like(cli.ledger, { ok: true });
  t.true(cli.ledger.head.seq >= api.ledger.head.seq);
  t.is(typeof cli.markdown, 'string');
});

test('oncall digest refuses days outside 1..90 and --markdown with --json', async (t) => {
  for (const bad of ['0', '91', '1.5', 'x']) {
    const r = await oncall(['digest', '--days', bad]);
    t.is(r.code, 2, bad);
    t.regex(r.stderr, /--days: days must be a whole number from 1 to 90/, bad);
  }
  const both = await oncall(['digest', '--markdown', '--json']);
  t.is(both.code, 2);
  t.deepEqual(json(both), { ok: false, error: 'bad_flag', message: '--markdown and --json cannot be used together' });
});
