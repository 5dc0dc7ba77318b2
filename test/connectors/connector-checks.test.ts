import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { MINUTE } from '../../host/clock.ts';
import { CHECK_EVERY_MS, CHECK_LEASE, ConnectorChecker } from '../../host/schedule/connector-checker.ts';
import type { ConnectorService } from '../../host/connectors/connectors.service.ts';
import { LeaseRepo } from '../../host/schedule/lease.repo.ts';
import { makeOperating, startApp, type TestApp } from '../helpers/app.ts';

const TOKEN = 'tok-CHECKS-9f8e7d6c5b4a';

/** A local system: healthy on /healthz with the token while `up`, else 503. */
async function system(t: ExecutionContext): Promise<{ base: string; up: boolean; hits: number }> {
  const state = { base: '', up: true, hits: 0 };
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    state.hits++;
    const ok = state.up && req.url === '/healthz' && req.headers.authorization === `Bearer ${TOKEN}`;
    res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
    res.end(JSON.stringify(ok ? { status: 'up' } : { status: 'down' }));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))));
  state.base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return state;
}

async function operating(t: ExecutionContext): Promise<TestApp> {
  const ta = await startApp(t);
  await makeOperating(ta);
  return ta;
}

const settingsOf = (base: string) => ({ base_url: base, health_path: '/healthz', bearer_token: TOKEN, timeout_s: 5 });

test('a connector saved right after a test of exactly those settings carries that test as its last check', async (t) => {
  const ta = await operating(t);
  const sys = await system(t);
  const tested = await ta.call('POST', '/v1/connectors/test', { body: { kind: 'http', settings: settingsOf(sys.base) } });
  t.like(tested.body, { ok: true });
  const saved = await ta.call('PUT', '/v1/connectors/orders-api', { body: { kind: 'http', settings: settingsOf(sys.base) } });
  t.is(saved.status, 201);
  t.like(saved.body, { state: 'ok', last_problem: null, last_checked_at: tested.body.checked_at, found: { status: 200 } });
  const event = (await ta.call('GET', '/v1/ledger?type=config.connector_saved')).body.events[0];
  t.deepEqual(event.data.checked_by_test, { ok: true, checked_at: tested.body.checked_at });
  t.false(JSON.stringify(event).includes(TOKEN));

  // A failed test counts too: saved "despite the failed test", it shows the problem.
  sys.up = false;
  const failed = await ta.call('POST', '/v1/connectors/test', { body: { kind: 'http', settings: { ...settingsOf(sys.base), timeout_s: 4 } } });
  t.false(failed.body.ok);
  const savedBad = await ta.call('PUT', '/v1/connectors/orders-api', { body: { kind: 'http', settings: { ...settingsOf(sys.base), timeout_s: 4 } } });
  t.like(savedBad.body, { state: 'problem', last_problem: failed.body.problem });

  // Other settings than those tested, or a test too long ago: not checked since saved.
  const other = await ta.call('PUT', '/v1/connectors/orders-api', { body: { kind: 'http', settings: { ...settingsOf(sys.base), timeout_s: 3 } } });
  t.like(other.body, { state: 'unchecked', last_checked_at: null });
  sys.up = true;
  await ta.call('POST', '/v1/connectors/test', { body: { kind: 'http', settings: { ...settingsOf(sys.base), timeout_s: 2 } } });
  ta.clock.advance(16 * MINUTE);
  const late = await ta.call('PUT', '/v1/connectors/orders-api', { body: { kind: 'http', settings: { ...settingsOf(sys.base), timeout_s: 2 } } });
  t.like(late.body, { state: 'unchecked', last_checked_at: null });
});

test('connectors are re-checked every 5 minutes under a lease; the list carries the fresh problem; the ledger only on a change', async (t) => {
  const ta = await operating(t);
  const sys = await system(t);
  await ta.call('PUT', '/v1/connectors/orders-api', { body: { kind: 'http', settings: settingsOf(sys.base) } });
  t.like((await ta.call('GET', '/v1/connectors')).body.connectors[0], { state: 'unchecked' });

  // Nothing in the first interval after the process started.
  t.is(await ta.app.connectorChecks.runNow(), null);
  t.is((await ta.call('GET', '/v1/connectors')).body.connectors[0].state, 'unchecked');
  ta.clock.advance(CHECK_EVERY_MS);
  const first = await ta.app.connectorChecks.runNow();
  t.deepEqual(first?.checked, [{ name: 'orders-api', ok: true, changed: true }]);
  t.like((await ta.call('GET', '/v1/connectors')).body.connectors[0], { state: 'ok', last_checked_at: ta.clock.now().toISOString() });
  const lease = await new LeaseRepo(ta.app.db).get(CHECK_LEASE);
  t.is(lease?.until_ms, ta.clock.now().getTime() + CHECK_EVERY_MS);

  // Not due again before the interval has passed, however often the tick runs.
  const hits = sys.hits;
  ta.clock.advance(CHECK_EVERY_MS - 1000);
  t.is(await ta.app.connectorChecks.runNow(), null);
  t.is(sys.hits, hits);

  // The system breaks: the next round shows it in the list at once, and the ledger says so once.
  sys.up = false;
  ta.clock.advance(1000);
  const broken = await ta.app.connectorChecks.runNow();
  t.deepEqual(broken?.checked, [{ name: 'orders-api', ok: false, changed: true }]);
  const listed = (await ta.call('GET', '/v1/connectors')).body.connectors[0];
  t.like(listed, { state: 'problem', last_checked_at: ta.clock.now().toISOString() });
  t.regex(listed.last_problem, /503/);
  ta.clock.advance(CHECK_EVERY_MS);
  t.deepEqual((await ta.app.connectorChecks.runNow())?.checked, [{ name: 'orders-api', ok: false, changed: false }]);
  sys.up = true;
  ta.clock.advance(CHECK_EVERY_MS);
  t.deepEqual((await ta.app.connectorChecks.runNow())?.checked, [{ name: 'orders-api', ok: true, changed: true }]);

  const events = (await ta.call('GET', '/v1/ledger?type=connector.checked&order=asc')).body.events;
  t.deepEqual(
    events.map((e: { actor: string; data: { ok: boolean; scheduled: boolean } }) => [e.actor, e.data.ok, e.data.scheduled]),
    [
      ['system', true, true],
      ['system', false, true],
      ['system', true, true],
    ],
  );
  t.false(JSON.stringify(events).includes(TOKEN));
});

test('of several host processes racing for a round, exactly one checks, once per interval', async (t) => {
  const ta = await operating(t);
  const leases = new LeaseRepo(ta.app.db);
  let checks = 0;
  const fake = {
    names: async () => ['a', 'b'],
    checkOnSchedule: async () => {
      checks++;
      return { ok: true, changed: false };
    },
  } as unknown as ConnectorService;
  const hosts = Array.from({ length: 6 }, (_, i) => new ConnectorChecker({ connectors: fake, leases, clock: ta.clock, log: ta.app.log, holder: `host-${i}` }));
  for (let round = 0; round < 3; round++) {
    ta.clock.advance(CHECK_EVERY_MS);
    const rounds = await Promise.all(hosts.map((h) => h.runNow()));
    t.is(rounds.filter((r) => r !== null).length, 1, `round ${round}`);
    t.is(checks, 2 * (round + 1));
  }
});
