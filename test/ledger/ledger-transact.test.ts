import test from 'ava';
import type { ChainHead, StoredEntry } from '../../host/ledger/entry.ts';
import type { Trx } from '../../host/storage/db.ts';
import { startApp, type TestApp } from '../helpers/app.ts';

/** Counts the repo's head locks and appends while `run` goes. */
async function counted(ta: TestApp, run: () => Promise<void>): Promise<{ locks: number; appends: number[] }> {
  const repo = ta.app.ledger.repo;
  const lockHead = repo.lockHead.bind(repo);
  const appendIn = repo.appendIn.bind(repo);
  const seen = { locks: 0, appends: [] as number[] };
  repo.lockHead = (trx: Trx) => (seen.locks++, lockHead(trx));
  repo.appendIn = (trx, build, locked) =>
    appendIn(
      trx,
      (h: ChainHead) => {
        const chained = build(h);
        seen.appends.push(chained.rows.length);
        return chained;
      },
      locked,
    );
  try {
    await run();
  } finally {
    repo.lockHead = lockHead;
    repo.appendIn = appendIn;
  }
  return seen;
}

const event = (i: number) => ({ type: 'system.transact_test', actor: 'system', reason: `event ${i}`, data: { i } });

test('a transaction appends everything it recorded once its work is done: one head lock, one append, in the order recorded', async (t) => {
  const ta = await startApp(t);
  const before = await ta.app.ledger.head();
  for (const headFirst of [false, true]) {
    const seen = await counted(ta, () =>
      ta.app.ledger.transact(
        async (_trx, record) => {
          await record(event(1));
          await record([event(2), event(3)]);
          await record(event(4));
        },
        { headFirst },
      ),
    );
    t.deepEqual(seen, { locks: 1, appends: [4] }, `headFirst ${headFirst}`);
  }
  const rows = (await ta.app.db<StoredEntry>('ledger_events').where('seq', '>', before.seq).orderBy('seq')) as StoredEntry[];
  t.deepEqual(
    rows.map((r) => r.reason),
    ['event 1', 'event 2', 'event 3', 'event 4', 'event 1', 'event 2', 'event 3', 'event 4'],
  );
  t.true((await ta.app.verifyLedger()).ok);
});

test('a transaction that records nothing does not touch the chain head; one that fails after recording appends nothing', async (t) => {
  const ta = await startApp(t);
  const nothing = await counted(ta, () => ta.app.ledger.transact(async () => {}));
  t.deepEqual(nothing, { locks: 0, appends: [] });
  const before = await ta.app.ledger.head();
  await t.throwsAsync(
    ta.app.ledger.transact(async (_trx, record) => {
      await record(event(1));
      throw new Error('the change failed');
    }),
    { message: 'the change failed' },
  );
  t.deepEqual(await ta.app.ledger.head(), before);
});

test('an event the ledger refuses throws where it is recorded, before the change goes on', async (t) => {
  const ta = await startApp(t);
  let after = false;
  await t.throwsAsync(
    ta.app.ledger.transact(async (_trx, record) => {
      await record({ type: 'Not A Type', actor: 'system' });
      after = true;
    }),
    { message: /dotted lower-case/ },
  );
  t.false(after);
});
