// The digest (issue 16): GET /v1/digest's figures against a seeded day (on SQLite, and on
// MariaDB with TEST_DATABASE_URL), its Markdown snapshot, the days limit, the window, and the
// ledger verification it prints.
import test from 'ava';
import { readFileSync, writeFileSync } from 'node:fs';
import { DAY, HOUR, MINUTE, TestClock } from '../../host/clock.ts';
import { markdownText as escapeMarkdown } from '../../host/escape.ts';
import { renderDigest } from '../../host/digest/markdown.ts';
import { LedgerStanding } from '../../host/digest/ledger-standing.ts';
import type { VerifyReport } from '../../host/ledger/verify.ts';
import { startApp, makeOperating } from '../helpers/app.ts';
import { HOSTILE_ALERT, seedDay, seededApp } from '../helpers/digest-seed.ts';

const SNAPSHOT = new URL('../fixtures/digest.md', import.meta.url);

test('the digest of a seeded day: every figure, the Markdown snapshot, and a ledger that still verifies', async (t) => {
  const { ta } = await seededApp(t);
  await seedDay(ta);
  ta.clock.advance(HOUR);
  const r = await ta.call('GET', '/v1/digest');
  t.is(r.status, 200, JSON.stringify(r.body));
  const d = r.body;
  t.is(d.days, 1);
  t.is(d.to, ta.clock.now().toISOString());
  t.is(d.from, new Date(ta.clock.now().getTime() - DAY).toISOString());
  t.deepEqual(d.episodes, {
    opened: 3,
    closed: 1,
    by_outcome: { mitigated: 1, escalated: 2 },
    by_service: [
      { service: 'jobs', opened: 1, closed: 1, mitigated: 1, escalated: 0 },
      { service: 'batch', opened: 1, closed: 0, mitigated: 0, escalated: 1 },
      { service: 'cron', opened: 1, closed: 0, mitigated: 0, escalated: 1 },
    ],
  });
  // Diagnosed 30, 45 and 90 s after opening; jobs mitigated 30 + 120 + 60 s after.
  t.deepEqual(d.times, { diagnosis_p50_s: 45, diagnosis_p90_s: 90, mitigation_p50_s: 210, mitigation_p90_s: 210 });
  t.deepEqual(d.actions, { executed: 1, refused: 1, failed: 0, undone: 1 });
  // Answered after 120 s (approved), 300 s (rejected) and 60 s (approved, then refused by the halt).
  t.deepEqual(d.approvals, { asked: 3, approved: 2, rejected: 1, expired: 0, answer_p50_s: 120 });
  t.deepEqual(
    d.governance.autonomy_changes.map((c: any) => [c.service, c.from, c.to, c.by]),
    [['cron', 'L1', 'shadow', 'owner@bank.example']],
  );
  t.deepEqual(
    d.governance.halts.map((h: any) => [h.action, h.by, h.reason]),
    [
      ['halted', 'owner@bank.example', 'change freeze | *quarter end*'],
      ['resumed', 'owner@bank.example', 'halt released by owner@bank.example'],
    ],
  );
  t.deepEqual(d.noisiest_alerts[0], {
    source: 'generic',
    name: HOSTILE_ALERT,
    service: null,
    firings: 3,
    alerts: 1,
    last_fired: d.noisiest_alerts[0].last_fired,
  });
  t.deepEqual(
    d.noisiest_alerts.slice(1).map((a: any) => [a.name, a.service, a.firings]),
    [
      ['WorkerStuck', 'cron', 1],
      ['WorkerStuck', 'batch', 1],
      ['WorkerStuck', 'jobs', 1],
    ],
  );
  t.deepEqual(
    d.unplaced_alerts.map((a: any) => [a.name, a.firings]),
    [[HOSTILE_ALERT, 3]],
  );
  t.is(d.study, null, 'no study has run');
  t.deepEqual(
    d.connectors_with_problems.map((c: any) => [c.name, c.kind, c.problem]),
    [['broken', 'fixer', 'the <b>fixer</b> is down']],
  );
  const verified = await ta.app.verifyLedger();
  t.true(verified.ok);
  t.like(d.ledger, { ok: true, problem: null, head: { seq: verified.head.seq, hash: verified.head.hash } });

  // The Markdown: a stable layout (only the head's hash differs between runs: ids are random).
  const markdown = (d.markdown as string).replace(d.ledger.head.hash, '<head hash>');
  if (process.env.UPDATE_SNAPSHOTS === '1') writeFileSync(SNAPSHOT, markdown);
  t.is(markdown, readFileSync(SNAPSHOT, 'utf8'));
  t.false(/(^|[^\\])<img/.test(d.markdown), 'the alert name is escaped');
  t.true(d.markdown.includes('\\<img src=x onerror=alert(1)\\>'));

  // A window is a window: a day later the seeded day is out of `days=1` and in `days=7`.
  ta.clock.advance(DAY);
  const later = (await ta.call('GET', '/v1/digest?days=1')).body;
  t.like(later.episodes, { opened: 0, closed: 0, by_service: [] });
  t.deepEqual(later.actions, { executed: 0, refused: 0, failed: 0, undone: 0 });
  t.like(later.approvals, { asked: 0, answer_p50_s: null });
  t.deepEqual(later.governance, { autonomy_changes: [], autonomy_changes_left_out: 0, halts: [], halts_left_out: 0 });
  t.deepEqual([later.noisiest_alerts, later.unplaced_alerts], [[], []]);
  t.deepEqual(later.times, { diagnosis_p50_s: null, diagnosis_p90_s: null, mitigation_p50_s: null, mitigation_p90_s: null });
  const week = (await ta.call('GET', '/v1/digest?days=7')).body;
  t.is(week.days, 7);
  t.like(week.episodes, { opened: 3, closed: 1 });
  t.deepEqual(week.actions, d.actions);
  t.true((await ta.app.verifyLedger()).ok);
});

test('days must be a whole number from 1 to 90: 400 naming the limit; 503 until operating; 401 without a token', async (t) => {
  const ta = await startApp(t);
  t.is((await ta.call('GET', '/v1/digest')).status, 503);
  t.is((await ta.call('GET', '/v1/digest')).body.error, 'not_operating');
  await makeOperating(ta);
  t.is((await ta.call('GET', '/v1/digest', { token: null })).status, 401);
  for (const bad of ['0', '91', '1.5', 'x', '-1', '1e1', '007x', '1000']) {
    const r = await ta.call('GET', `/v1/digest?days=${bad}`);
    t.is(r.status, 400, bad);
    t.is(r.body.error, 'invalid_parameter', bad);
    t.regex(r.body.message, /days must be a whole number from 1 to 90/, bad);
  }
  for (const [q, days] of [
    ['', 1],
    ['?days=1', 1],
    ['?days=30', 30],
    ['?days=90', 90],
  ] as const) {
    const r = await ta.call('GET', `/v1/digest${q}`);
    t.is(r.status, 200, q);
    t.is(r.body.days, days);
    t.is(Date.parse(r.body.to) - Date.parse(r.body.from), days * DAY);
    t.is(typeof r.body.markdown, 'string');
  }
});

const report = (seq: number, ok = true): VerifyReport => ({
  ok,
  checked: seq,
  first_bad_seq: ok ? null : 3,
  head: { seq, hash: `h${seq}` },
  checkpoint: null,
  problem: ok ? null : 'hash_mismatch',
  range: null,
  expected: null,
});

test('the ledger standing: one verify for concurrent asks, reused while the head stands or for 10 minutes, fresh when asked', async (t) => {
  const clock = new TestClock('2026-06-01T00:00:00.000Z');
  let head = 5;
  let verifies = 0;
  let release: () => void = () => undefined;
  const standing = new LedgerStanding({
    verify: async () => {
      verifies++;
      await new Promise<void>((resolve) => (release = resolve));
      return report(head);
    },
    head: async () => ({ seq: head, hash: `h${head}` }),
    clock,
  });
  const asks = [standing.standing(), standing.standing(), standing.standing()];
  await new Promise((resolve) => setImmediate(resolve));
  release();
  const views = await Promise.all(asks);
  t.is(verifies, 1, 'concurrent asks share one verify');
  t.deepEqual(views[0], { ok: true, head: { seq: 5, hash: 'h5' }, verified_at: '2026-06-01T00:00:00.000Z', problem: null });
  head = 9;
  clock.advance(5 * MINUTE);
  t.like(await standing.standing(), { head: { seq: 5 } }, 'within 10 minutes the verified head is shown, not the newer one');
  t.is(verifies, 1);
  clock.advance(6 * MINUTE);
  const next = standing.standing();
  await new Promise((resolve) => setImmediate(resolve));
  release();
  t.like(await next, { head: { seq: 9 }, verified_at: '2026-06-01T00:11:00.000Z' }, 'after 10 minutes with a moved head: verified again');
  t.is(verifies, 2);
  clock.advance(HOUR);
  t.like(await standing.standing(), { head: { seq: 9 } }, 'an unmoved head needs no new verify');
  t.is(verifies, 2);
  const fresh = standing.standing({ fresh: true });
  await new Promise((resolve) => setImmediate(resolve));
  release();
  await fresh;
  t.is(verifies, 3, 'the daily e-mail asks for a fresh one');
});

test('Markdown escaping: names from strangers never format, link, open HTML or break a table', (t) => {
  t.is(escapeMarkdown('<img src=x onerror=alert(1)>'), '\\<img src=x onerror=alert(1)\\>');
  t.is(escapeMarkdown('a|b *c* _d_ [e](f) `g` ~h~ &amp; \\'), 'a\\|b \\*c\\* \\_d\\_ \\[e\\](f) \\`g\\` \\~h\\~ \\&amp; \\\\');
  t.is(escapeMarkdown('two\nlines\r\n  here'), 'two lines here');
  t.is(escapeMarkdown('checkout-api.v2'), 'checkout-api.v2', 'ordinary names stay readable');
});

test('the Markdown of an empty digest says so in every section', (t) => {
  const md = renderDigest({
    days: 7,
    from: '2026-05-25T00:00:00.000Z',
    to: '2026-06-01T00:00:00.000Z',
    episodes: { opened: 0, closed: 0, by_outcome: { mitigated: 0, escalated: 0 }, by_service: [] },
    times: { diagnosis_p50_s: null, diagnosis_p90_s: null, mitigation_p50_s: null, mitigation_p90_s: null },
    actions: { executed: 0, refused: 0, failed: 0, undone: 0 },
    approvals: { asked: 0, approved: 0, rejected: 0, expired: 0, answer_p50_s: null },
    governance: { autonomy_changes: [], autonomy_changes_left_out: 0, halts: [], halts_left_out: 0 },
    noisiest_alerts: [],
    unplaced_alerts: [],
    study: { finished_at: '2026-05-31T00:00:00.000Z', provable_share: 0.625, cut_short: true, holding_now: [{ service: 'db', cause: 'disk <full>' }] },
    connectors_with_problems: [],
    ledger: { ok: false, head: { seq: 10, hash: 'ab' }, verified_at: '2026-06-01T00:00:00.000Z', problem: 'hash_mismatch at seq 3' },
  });
  t.true(md.startsWith('# Digest of the last 7 days\n'));
  for (const line of [
    '- To diagnosis: p50 no sample, p90 no sample',
    'None fired.',
    'None: every alert that fired was placed under a service.',
    '- Finished 2026-05-31T00:00:00.000Z (cut short at its time limit): 62.5 % of the causes can be proven today',
    '  - db: disk \\<full\\>',
    '- Does NOT verify: hash\\_mismatch at seq 3 (checked 2026-06-01T00:00:00.000Z)',
  ])
    t.true(md.includes(line), line);
});
