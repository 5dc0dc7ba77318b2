// Issue 22, item 10: the digest under load. Twelve viewers asking for 90 days at once cost one
// build; the ledger's window is read in bounded chunks that give the event loop a turn (so
// /health is not stalled on SQLite: npm run bench:digest measures it); the governance lists
// say how many they left out. On SQLite, and on MariaDB with TEST_DATABASE_URL.
import test from 'ava';
import { MINUTE } from '../../host/clock.ts';
import { ledgerWindow, WINDOW_CHUNK } from '../../host/ledger/window.ts';
import { LedgerRepo } from '../../host/ledger/ledger.repo.ts';
import { makeOperating, startApp } from '../helpers/app.ts';
import { signedIn } from '../helpers/people.ts';

/** Appends `n` events, 1,000 per commit, each type in turn, the clock moving a second per commit. */
async function fill(ta: Awaited<ReturnType<typeof startApp>>, n: number, types: string[]): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    ta.clock.advance(1000);
    const size = Math.min(1000, n - i);
    await ta.app.ledger.transact(async (_trx, record) => {
      await record(
        Array.from({ length: size }, (_, j) => ({ type: types[(i + j) % types.length]!, actor: 'system', reason: 'load', data: { service: 'svc', n: i + j } })),
      );
    });
  }
}

test('the ledger window counts and lists across chunks exactly as one statement would, a statement per chunk', async (t) => {
  const ta = await startApp(t, { manualTick: true });
  await makeOperating(ta);
  const start = ta.clock.now().getTime();
  await fill(ta, 2 * WINDOW_CHUNK + 5000, ['action.executed', 'signal.pushed', 'check.finished', 'retrieval.context']);
  // Three rare events at the very start: listing them reads every chunk from the top down.
  await ta.app.ledger.transact(async (_trx, record) => {
    await record([1, 2, 3].map((n) => ({ type: 'human.note', actor: 'system', reason: `rare ${n}`, data: {} })));
  });
  const repo = new LedgerRepo(ta.app.db);
  const window = ledgerWindow(repo);
  const span = await window.span(start, ta.clock.now().getTime() + MINUTE);
  t.true(span.to_seq - span.from_seq > 2 * WINDOW_CHUNK);
  const statements: string[] = [];
  const spy = (q: { sql: string }) => statements.push(q.sql);
  ta.app.db.on('query', spy);
  const counted = await window.count(span, ['action.executed', 'check.finished', 'human.note']);
  const chunks = Math.ceil((span.to_seq - span.from_seq) / WINDOW_CHUNK);
  t.is(statements.filter((s) => /count\(/i.test(s) && /ledger_events/.test(s)).length, chunks, 'one bounded statement per chunk');
  t.deepEqual(
    Object.fromEntries(counted),
    Object.fromEntries(await repo.countTypes(span.from_seq, span.to_seq, ['action.executed', 'check.finished', 'human.note'])),
  );
  const rare = await window.events(span, ['human.note'], 2);
  t.deepEqual(
    rare.map((e) => e.reason),
    ['rare 2', 'rare 3'],
    'the newest two, oldest first',
  );
  const many = await window.events(span, ['action.executed'], 50);
  t.is(many.length, 50);
  t.true(many.every((e, i) => i === 0 || e.seq > many[i - 1]!.seq));
  ta.app.db.off('query', spy);
});

test('twelve viewers asking for 90 days at once are answered by one build, and each gets the same digest', async (t) => {
  const ta = await startApp(t, { manualTick: true });
  await makeOperating(ta);
  const viewer = await signedIn(ta, 'viewer@bank.example', 'viewer');
  await fill(ta, 3000, ['action.executed', 'signal.pushed']);
  ta.clock.advance(1000);
  let counts = 0;
  const spy = (q: { sql: string }) => {
    if (/count\(/i.test(q.sql) && /ledger_events/.test(q.sql)) counts++;
  };
  ta.app.db.on('query', spy);
  // Twelve asks while the first is being built (made in one turn, so all of them are): one build.
  const built = await Promise.all(Array.from({ length: 12 }, () => ta.app.digest.digest.build(90)));
  t.is(counts, 1, 'one build counted the ledger once');
  t.true(built.every((d) => d === built[0]));
  t.is(built[0]!.actions.executed, 1500);
  // A later ask builds anew; another range is its own build, after the one under way.
  counts = 0;
  await Promise.all([ta.app.digest.digest.build(90), ta.app.digest.digest.build(7)]);
  t.is(counts, 2);
  // Over HTTP, by a viewer, all at once: every answer is the digest.
  const answers = await Promise.all(Array.from({ length: 12 }, () => ta.call('GET', '/v1/digest?days=90', { token: viewer })));
  ta.app.db.off('query', spy);
  t.deepEqual(
    answers.map((a) => a.status),
    Array(12).fill(200),
  );
  t.true(answers.every((a) => a.body.actions.executed === 1500));
});

test('the governance lists show the newest 50 and say how many they left out', async (t) => {
  const ta = await startApp(t, { manualTick: true });
  await makeOperating(ta);
  for (let i = 0; i < 53; i++) {
    ta.clock.advance(1000);
    await ta.app.ledger.append({
      type: 'governance.autonomy_changed',
      actor: 'admin-token',
      reason: `change ${i}`,
      data: { service: `svc-${i}`, from: 'shadow', to: 'off', by: 'ops@bank.example' },
    });
  }
  ta.clock.advance(1000);
  const d = (await ta.call('GET', '/v1/digest?days=1')).body;
  t.is(d.governance.autonomy_changes.length, 50);
  t.is(d.governance.autonomy_changes[0].service, 'svc-3', 'the newest 50, oldest first');
  t.is(d.governance.autonomy_changes_left_out, 3);
  t.is(d.governance.halts_left_out, 0);
  t.true(d.markdown.includes('3 older autonomy changes are not listed (only the newest 50 are); the ledger has them all.'));
  t.false(d.markdown.includes('halt or resume events are not listed'));
});
