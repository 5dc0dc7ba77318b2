// How many checks a host runs at once (host/investigation/check-gate.ts): fewer while the event
// loop is busy, more while it has room, never fewer than GATE_MIN nor more than GATE_MAX.
import test from 'ava';
import type { Cause } from '../../host/investigation/catalogue.ts';
import { CheckGate, GATE_BUSY, GATE_MAX, GATE_MIN } from '../../host/investigation/check-gate.ts';
import type { CheckInputs, ReaderSource } from '../../host/investigation/context.ts';
import { InvestigationService, type InvestigationDeps } from '../../host/investigation/investigation.service.ts';
import { silentLogger } from '../../host/log.ts';

/** A gate whose loop utilisation the test sets; `adjust()` samples it. */
function gate() {
  const loop = { u: 0 };
  return { loop, g: new CheckGate({ utilisation: () => loop.u, sampleMs: 60_000 }) };
}

test(`with room, ${GATE_MAX} checks run at once and the next waits for one to finish`, async (t) => {
  const { g } = gate();
  const leaves = await Promise.all(Array.from({ length: GATE_MAX }, () => g.enter()));
  t.is(g.active, GATE_MAX);
  let entered = false;
  const next = g.enter().then((leave) => ((entered = true), leave));
  await Promise.resolve();
  t.false(entered);
  leaves[0]!();
  leaves[0]!(); // leaving twice frees one place only
  const leave = await next;
  t.true(entered);
  t.is(g.active, GATE_MAX);
  for (const l of [...leaves.slice(1), leave]) l();
  t.is(g.active, 0);
});

test(`a busy loop halves the checks let in, down to ${GATE_MIN}; a loop with room lets one more in per sample`, (t) => {
  const { loop, g } = gate();
  loop.u = GATE_BUSY + 0.1;
  const seen: number[] = [];
  for (let i = 0; i < 5; i++) {
    g.adjust();
    seen.push(g.limit);
  }
  t.deepEqual(seen, [8, 4, 2, 2, 2]);
  loop.u = GATE_BUSY; // at the line is room
  g.adjust();
  t.is(g.limit, 3);
  for (let i = 0; i < 30; i++) g.adjust();
  t.is(g.limit, GATE_MAX);
});

test('while the loop is busy, checks beyond the limit wait, and are let in as it gets room', async (t) => {
  const { loop, g } = gate();
  loop.u = 1;
  for (let i = 0; i < 4; i++) g.adjust();
  t.is(g.limit, GATE_MIN);
  const entered: number[] = [];
  const leaves = Array.from({ length: 5 }, (_, i) => g.enter().then((leave) => (entered.push(i), leave)));
  await new Promise((r) => setImmediate(r));
  t.deepEqual(entered, [0, 1]);
  loop.u = 0.2;
  g.adjust(); // 3
  await new Promise((r) => setImmediate(r));
  t.deepEqual(entered, [0, 1, 2]);
  (await leaves[0]!)();
  await new Promise((r) => setImmediate(r));
  t.deepEqual(entered, [0, 1, 2, 3]);
  t.is(g.active, 3);
  g.adjust(); // 4
  await new Promise((r) => setImmediate(r));
  t.deepEqual(entered, [0, 1, 2, 3, 4]);
  for (const l of leaves.slice(1)) (await l)();
  t.is(g.active, 0);
});

test('every investigation of the host takes its checks through the one gate: two at once while the loop is busy', async (t) => {
  const { loop, g } = gate();
  loop.u = 1;
  for (let i = 0; i < 4; i++) g.adjust();
  const service = new InvestigationService({ log: silentLogger(), gate: g } as unknown as InvestigationDeps);
  let running = 0;
  let most = 0;
  const cause = (id: string): Cause => ({
    id: `test/${id}`,
    title: id,
    pack: 'test',
    specificity: 1,
    explains: [],
    reads: [],
    named: {},
    defaults: {},
    applies: {} as Cause['applies'],
    check: async () => {
      most = Math.max(most, ++running);
      await new Promise((r) => setImmediate(r));
      running--;
      return { verdict: 'ruled_out', reason: 'nothing', evidence: [] } as never;
    },
  });
  const inputs = {
    episode: { id: null, service: 'pay', opened_at: '2026-06-01T00:00:00.000Z' },
    at: '2026-06-01T00:00:00.000Z',
    moment: 'now',
    signals: [],
    service: { name: 'pay' },
    related: { dependencies: [], history: [] },
    overrides: {},
  } as unknown as CheckInputs;
  const source: ReaderSource = {
    obstacle: () => null,
    readers: () => {
      const no = async () => ({}) as never;
      return { metrics: { query: no, range: no }, changes: { since: no }, http: { get: no }, ledger: { events: no }, read: no } as never;
    },
    secrets: () => [],
  };
  const causes = ['a', 'b', 'c', 'd'].map(cause);
  const results = await Promise.all([service.checkAll(causes, inputs, source), service.checkAll(causes, inputs, source)]);
  t.is(results.flat().length, 8);
  t.is(most, GATE_MIN);
});
