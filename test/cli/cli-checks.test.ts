// `oncall packs list` and `oncall checks run` (issue 14): the packs as the service loads them,
// and checks run by hand in the CLI's process, read-only unless --record.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { loadConfig } from '../../host/config.ts';
import { openDb } from '../../host/storage/db.ts';
import { makeOperating, serviceEnv, startApp, type TestApp } from '../helpers/app.ts';
import { json, oncall } from '../helpers/cli.ts';
import { createTestStore, everyRow } from '../helpers/db.ts';

/** A vendor's plugins folder (SERVICE_PLUGINS_DIR) holding the packs given. */
function vendorPacks(t: ExecutionContext, packs: Record<string, { manifest?: unknown; code: string }>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-cli-packs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, p] of Object.entries(packs)) {
    mkdirSync(path.join(dir, name));
    writeFileSync(
      path.join(dir, name, 'plugin.json'),
      JSON.stringify(p.manifest ?? { name, version: '1.2.0', kind: 'pack', api: '^1.1.0', entry: 'index.mjs', description: 'test pack' }),
    );
    writeFileSync(path.join(dir, name, 'index.mjs'), p.code);
  }
  return dir;
}

const TEST_PACK = `
const cause = (name, check, more = {}) => ({ id: 'tp/' + name, title: 'Test ' + name, specificity: 50, applies: { always: true }, reads: [], check, ...more });
export default {
  causes: [
    cause('holds', (ctx) => ({
      verdict: 'holds',
      reason: 'the error rate of ' + ctx.service.name + ' is high',
      evidence: [{ source: 'prom', kind: 'metric', query: 'sum(rate(http_requests_total{code=~"5.."}[5m]))', at: '2026-06-01T00:00:00.000Z', observed: { value: 0.4 }, excerpt: '40 % of requests fail' }],
    })),
    cause('ruled', () => ({ verdict: 'ruled_out', reason: 'nothing changed', evidence: [{ source: 'git', kind: 'commits', query: 'commits since 1h', at: '2026-06-01T00:00:00.000Z', observed: [], excerpt: 'no commits' }] })),
    cause('metrics', async (ctx) => { await ctx.metrics.query('up'); return { verdict: 'ruled_out', reason: 'read', evidence: [] }; }, { reads: ['metrics'] }),
  ],
};
`;

const BROKEN_PACK = { code: `export default { causes: [{ id: 'broken/x', title: 'X', specificity: 5, applies: { always: true }, reads: [] }] };` };

// packs list

test('packs list prints each pack with its version, causes and what each reads, and a broken pack with its problem (exit 1)', async (t) => {
  const dir = vendorPacks(t, { tp: { code: TEST_PACK }, broken: BROKEN_PACK });
  // No install, no database: the packs are read from the folders alone.
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const env = serviceEnv(store, { SERVICE_PLUGINS_DIR: dir });
  const res = await oncall(['packs', 'list', '--json'], env);
  t.is(res.code, 1, 'a broken pack is a failed check');
  // The shipped packs (packs/) are listed too; these tests look at the vendor's.
  t.deepEqual(
    json(res).filter((p: { name: string }) => ['broken', 'tp'].includes(p.name)),
    [
      { name: 'broken', version: '1.2.0', causes: [], state: 'broken', problem: 'plugin "broken" 1.2.0 in broken: cause broken/x has no check() function' },
      {
        name: 'tp',
        version: '1.2.0',
        causes: [
          { id: 'tp/holds', title: 'Test holds', reads: [] },
          { id: 'tp/ruled', title: 'Test ruled', reads: [] },
          { id: 'tp/metrics', title: 'Test metrics', reads: ['metrics'] },
        ],
        state: 'loaded',
        problem: null,
      },
    ],
  );
  t.false(res.stdout.includes(tmpdir()), 'folders on the machine are not shown');
  const text = await oncall(['packs', 'list'], env);
  t.is(text.code, 1);
  t.regex(text.stdout, /^broken 1\.2\.0 {2}broken: plugin "broken" 1\.2\.0 in broken: cause broken\/x has no check\(\) function$/m);
  t.regex(text.stdout, /^tp 1\.2\.0 {2}loaded, 3 cause\(s\)$/m);
  t.regex(text.stdout, /^ {2}tp\/metrics {2}Test metrics {2}\(reads: metrics\)$/m);
  t.regex(text.stdout, /^ {2}tp\/holds {4}Test holds {2}\(reads: none\)$/m);
  t.regex(text.stderr, /1 pack\(s\) broken/);
});

test('packs list exits 0 when every pack loads', async (t) => {
  const dir = vendorPacks(t, { tp: { code: TEST_PACK } });
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const res = await oncall(['packs', 'list', '--json'], serviceEnv(store, { SERVICE_PLUGINS_DIR: dir }));
  t.is(res.code, 0, res.stderr);
  const packs = json(res);
  t.deepEqual(
    packs.filter((p: { name: string }) => p.name === 'tp').map((p: { state: string }) => p.state),
    ['loaded'],
  );
  t.true(packs.every((p: { state: string }) => p.state === 'loaded'));
});

// checks run

async function started(t: ExecutionContext): Promise<TestApp> {
  const dir = vendorPacks(t, { tp: { code: TEST_PACK } });
  const ta = await startApp(t, { env: { SERVICE_PLUGINS_DIR: dir } });
  await makeOperating(ta);
  return ta;
}

async function snapshot(ta: TestApp): Promise<string> {
  const db = openDb(loadConfig(ta.env));
  try {
    return await everyRow(db);
  } finally {
    await db.destroy();
  }
}

const checkEvents = async (ta: TestApp): Promise<any[]> => (await ta.call('GET', '/v1/ledger?type=check.')).body.events;

test('checks run --json prints the verdicts and evidence of every cause, and writes nothing to the database', async (t) => {
  const ta = await started(t);
  const before = await snapshot(ta);
  const res = await oncall(['checks', 'run', '--service', 'checkout', '--at', '2026-06-01T00:00:00Z', '--json'], ta.env);
  t.is(res.code, 0, res.stdout + res.stderr);
  const out = json(res);
  t.deepEqual(Object.keys(out).sort(), ['at', 'evidence', 'service', 'verdicts']);
  t.like(out, { service: 'checkout', at: '2026-06-01T00:00:00.000Z' });
  // The shipped packs' causes run too; these tests look at the vendor pack's.
  const mine = out.verdicts.filter((v: any) => v.cause.startsWith('tp/'));
  t.deepEqual(
    mine.map((v: any) => [v.cause, v.verdict]),
    [
      ['tp/holds', 'holds'],
      ['tp/metrics', 'unknown'],
      ['tp/ruled', 'ruled_out'],
    ],
    'what holds first, then what could not be looked at, then what was ruled out',
  );
  const holds = mine[0];
  t.like(holds, { title: 'Test holds', reason: 'the error rate of checkout is high', obstacle: null });
  t.is(holds.evidence.length, 1);
  t.like(
    out.evidence.find((e: any) => e.id === holds.evidence[0]),
    { cause: 'tp/holds', source: 'prom', query: 'sum(rate(http_requests_total{code=~"5.."}[5m]))', observed: { value: 0.4 }, excerpt: '40 % of requests fail' },
  );
  t.like(mine[1], { obstacle: 'nothing connected can read it' });
  t.is(await snapshot(ta), before, 'no row of any table changed');
  t.deepEqual(await checkEvents(ta), []);
  // The snapshot sees a write: the same run with --record changes it.
  t.is((await oncall(['checks', 'run', '--service', 'checkout', '--cause', 'tp/ruled', '--record', '--json'], ta.env)).code, 0);
  t.not(await snapshot(ta), before);
});

test('checks run prints one line per verdict and its evidence as a query a person can re-run', async (t) => {
  const ta = await started(t);
  const res = await oncall(['checks', 'run', '--service', 'checkout'], ta.env);
  t.is(res.code, 0, res.stderr);
  t.regex(res.stdout, /^checks of checkout at \S+: \d+ holds?, \d+ ruled out, \d+ unknown$/m);
  t.regex(res.stdout, /^holds {6}tp\/holds +the error rate of checkout is high$/m);
  t.regex(res.stdout, /^ {2}sum\(rate\(http_requests_total\{code=~"5\.\."\}\[5m\]\)\) @ 2026-06-01T00:00:00\.000Z \(prom\): 40 % of requests fail$/m);
  t.regex(res.stdout, /^ruled_out {2}tp\/ruled +nothing changed$/m);
  t.regex(res.stdout, /^unknown {4}tp\/metrics +/m);
  t.regex(res.stdout, /^ {2}obstacle: nothing connected can read it$/m);
  t.regex(res.stdout, /nothing recorded/);
});

test('checks run --record writes check.started and check.finished with actor cli; without it, none', async (t) => {
  const ta = await started(t);
  const plain = await oncall(['checks', 'run', '--service', 'checkout', '--cause', 'tp/holds', '--json'], ta.env);
  t.is(plain.code, 0, plain.stderr);
  t.deepEqual(await checkEvents(ta), [], 'nothing recorded without --record');
  const res = await oncall(['checks', 'run', '--service', 'checkout', '--cause', 'tp/holds', '--record', '--json'], ta.env);
  t.is(res.code, 0, res.stderr);
  const out = json(res);
  t.deepEqual(
    out.verdicts.map((v: any) => v.cause),
    ['tp/holds'],
    '--cause runs that cause only',
  );
  const events = await checkEvents(ta);
  t.deepEqual(events.map((e) => e.type).sort(), ['check.finished', 'check.started']);
  t.true(events.every((e) => e.actor === 'cli'));
  t.like(events.find((e) => e.type === 'check.finished').data, { cause: 'tp/holds', service: 'checkout', verdict: 'holds', evidence: 1 });
  t.deepEqual(events.find((e) => e.type === 'check.started').data.causes, ['tp/holds'], 'one check.started names the causes run');
  t.true((await ta.app.verifyLedger()).ok);
});

test('checks run: an unknown cause or an --at that is not ISO 8601 exits 2 with a clear message', async (t) => {
  const ta = await started(t);
  const unknown = await oncall(['checks', 'run', '--service', 'checkout', '--cause', 'tp/nope'], ta.env);
  t.is(unknown.code, 2);
  t.regex(unknown.stderr, /no loaded pack declares cause tp\/nope; known causes: .*tp\/holds, tp\/metrics, tp\/ruled/);
  const unknownJson = await oncall(['checks', 'run', '--service', 'checkout', '--cause', 'tp/nope', '--json'], ta.env);
  t.is(unknownJson.code, 2);
  t.like(json(unknownJson), { ok: false, error: 'unknown_cause' });
  for (const at of ['yesterday', '2026-06-01', '2026-06-01T00:00:00']) {
    const bad = await oncall(['checks', 'run', '--service', 'checkout', '--at', at, '--json'], ta.env);
    t.is(bad.code, 2, at);
    t.like(json(bad), { ok: false, error: 'invalid_time' });
    t.regex(json(bad).message, /is not an ISO 8601 time/);
  }
  const badService = await oncall(['checks', 'run', '--service', 'bad name!'], ta.env);
  t.is(badService.code, 2);
  t.deepEqual(await checkEvents(ta), []);
});

test('checks run on an install that has not started says so (exit 1)', async (t) => {
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const res = await oncall(['checks', 'run', '--service', 'checkout', '--json'], serviceEnv(store));
  t.is(res.code, 1);
  t.like(json(res), { ok: false, error: 'not_started' });
});
