// Issue 24, "Leaner": a storm of unique alerts costs at most 4 ledger events per alert, with
// nothing an auditor needs lost: every check run the ledger says was started is closed (each of
// its causes finished, or the run replaced). Concurrent pushes on the injected clock; on SQLite,
// and on MariaDB with TEST_DATABASE_URL. The figures behind it: docs/performance.md ("Leaner").
import test from 'ava';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SECOND } from '../../host/clock.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';

/** A cause that applies everywhere and, while `globalThis.__leanGate` is set, waits for it: a run the test replaces while it runs. */
const PACK = `
export default {
  causes: [
    { id: 'lean/gate', title: 'Gated', specificity: 10, applies: { always: true }, reads: [],
      check: async () => { await (globalThis.__leanGate ?? Promise.resolve()); return { verdict: 'ruled_out', reason: 'done', evidence: [] }; } },
  ],
};
`;

const STEPS = 18; // 3 minutes, a push round every 10 s
const SENDERS = 2;
const PER_PUSH = 10;

test('a storm of unique alerts writes at most 4 ledger events per alert, and every check run started is closed', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-lean-'));
  mkdirSync(path.join(dir, 'lean'));
  writeFileSync(path.join(dir, 'lean', 'plugin.json'), JSON.stringify({ name: 'lean', version: '1.0.0', kind: 'pack', api: '^1.3.0', entry: 'index.mjs' }));
  writeFileSync(path.join(dir, 'lean', 'index.mjs'), PACK);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ta = await startApp(t, { env: { SERVICE_PLUGINS_DIR: dir }, manualTick: true });
  await makeOperating(ta);
  const g = globalThis as { __leanGate?: Promise<void> };
  t.teardown(() => delete g.__leanGate);
  const head = async () => Number((await ta.call('GET', '/v1/status')).body.ledger_head.seq);
  const before = await head();

  let alerts = 0;
  const round = () =>
    Promise.all(
      Array.from({ length: SENDERS }, async () => {
        const batch = Array.from({ length: PER_PUSH }, () => {
          const i = alerts++;
          return { name: 'Down', service: `storm-${i}`, severity: 'critical', id: `storm-${i}` };
        });
        const r = await push(ta, batch);
        t.is(r.status, 202, JSON.stringify(r.body));
      }),
    );

  // The first round's episodes are investigated while the gate is closed; alerts of a new name
  // join them meanwhile, so the runs going are replaced.
  let open!: () => void;
  g.__leanGate = new Promise<void>((r) => (open = r));
  await round();
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  const running = ta.app.investigation.investigations.run();
  let going: Array<{ service: string }> = [];
  for (let i = 0; i < 5000 && going.length === 0; i++) {
    going = (await ta.app.investigation.investigations.running(100)) as Array<{ service: string }>;
    if (going.length === 0) await new Promise((r) => setImmediate(r));
  }
  t.true(going.length > 0, 'investigations are running');
  for (const s of going) {
    alerts++;
    t.is((await push(ta, [{ name: 'Again', service: s.service, severity: 'critical', id: `${s.service}-again` }])).status, 202);
  }
  await ta.app.episodes.process();
  open();
  delete g.__leanGate;
  await running;

  // The rest of the storm, then time for every investigation and message to run.
  for (let step = 1; step < STEPS; step++) {
    await round();
    ta.clock.advance(10 * SECOND);
    await ta.app.tick();
  }
  for (let i = 0; i < 12; i++) {
    ta.clock.advance(10 * SECOND);
    await ta.app.tick();
  }
  await ta.app.investigation.investigations.run();

  const events = (await ta.app.db('ledger_events').where('seq', '>', before).orderBy('seq').select('seq', 'type', 'trace', 'data')) as Array<{
    type: string;
    trace: string | null;
    data: string;
  }>;
  const byType: Record<string, number> = {};
  for (const e of events) byType[e.type] = (byType[e.type] ?? 0) + 1;
  const perAlert = events.length / alerts;
  t.log(`${alerts} alerts, ${events.length} events, ${perAlert.toFixed(2)} per alert`, JSON.stringify(byType));
  t.true(byType['episode.opened']! >= 20, 'the storm opened episodes, each investigated');
  t.true(perAlert <= 4, `${perAlert.toFixed(2)} events per alert`);

  // Every run started is closed: each cause it names finished, or the run replaced.
  const runs = new Map<string, { causes: string[]; finished: Set<string>; replaced: number }>();
  const key = (trace: string | null, run: unknown) => `${trace}#${String(run)}`;
  for (const e of events) {
    const d = JSON.parse(e.data) as { run?: number; causes?: unknown; cause?: string };
    if (e.type === 'check.started') runs.set(key(e.trace, d.run), { causes: d.causes as string[], finished: new Set(), replaced: 0 });
    const r = runs.get(key(e.trace, d.run));
    if (e.type === 'check.finished') r!.finished.add(d.cause!);
    if (e.type === 'check.replaced') {
      r!.replaced++;
      t.is(d.causes, r!.causes.length, 'the replaced event counts the causes started');
    }
  }
  let replaced = 0;
  for (const [k, r] of runs) {
    t.true(r.causes.length > 0, k);
    if (r.replaced > 0) {
      replaced++;
      t.is(r.replaced, 1, `${k} closed once`);
      t.is(r.finished.size, 0, `${k}: a replaced run keeps no verdict`);
    } else t.deepEqual([...r.finished].sort(), [...r.causes].sort(), `${k}: every cause started is finished`);
  }
  t.true(replaced > 0, 'runs were replaced during the storm');
  t.is(byType['check.started'], runs.size, 'one check.started per run');
  // No mail is configured: each message's retries fail alike, and write one event, not one each.
  const messages = (await ta.app.db('notify_outbox').select('attempts')) as Array<{ attempts: number }>;
  t.true(
    messages.some((m) => m.attempts > 1),
    'messages were retried',
  );
  t.true((byType['outcome.notify_attempt_failed'] ?? 0) <= messages.length, 'at most one failure event per message');
  t.true((await ta.app.verifyLedger()).ok);
});

function push(ta: TestApp, alerts: unknown[]) {
  return ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { alerts } });
}
