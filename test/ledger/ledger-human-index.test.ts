import test from 'ava';
import { startApp } from '../helpers/app.ts';
import { dialect } from '../../host/storage/db.ts';

test("finding human.* events reads SQLite's partial index instead of walking the whole ledger", async (t) => {
  const ta = await startApp(t);
  const { app } = ta;
  for (let i = 0; i < 60; i++) {
    await app.ledger.append({ type: i % 20 === 0 ? 'human.deploy' : 'signal.pushed', actor: 'test', reason: `event ${i}`, data: { service: 'pay', n: i } });
  }
  await app.ledger.append({ type: 'humanity.noted', actor: 'test', reason: 'not a human. event', data: { service: 'pay' } });
  const seen: Array<{ sql: string; bindings: unknown[] }> = [];
  const onQuery = (q: { sql: string; bindings?: unknown[] }) => seen.push({ sql: q.sql, bindings: q.bindings ?? [] });
  app.db.on('query', onQuery);
  const { events } = await app.ledger.find({ type: 'human.', limit: 10, order: 'desc' });
  app.db.off('query', onQuery);
  t.deepEqual(
    events.map((e) => [e.type, e.data.n]),
    [
      ['human.deploy', 40],
      ['human.deploy', 20],
      ['human.deploy', 0],
    ],
  );
  if (dialect(app.db) !== 'sqlite') return;
  const find = seen.find((q) => q.sql.includes('from `ledger_events`'));
  t.truthy(find, 'the find query was seen');
  const plan = (await app.db.raw(`explain query plan ${find!.sql}`, find!.bindings as never)) as Array<{ detail: string }>;
  t.true(
    plan.some((r) => r.detail.includes('ledger_events_human')),
    plan.map((r) => r.detail).join(' | '),
  );
});
