import { hostname } from 'node:os';
import test from 'ava';
import { SECOND } from '../../host/clock.ts';
import { LeaseRepo } from '../../host/schedule/lease.repo.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';

const push = (ta: TestApp, service: string, name = 'HighErrorRate') =>
  ta.call('POST', '/v1/alerts/generic', { token: INGEST_TOKEN, body: { name, service, severity: 'critical', status: 'firing', id: `${service}-${name}` } });
const live = async (ta: TestApp) => {
  const res = await ta.call('GET', '/v1/live');
  if (res.status !== 200) throw new Error(`GET /v1/live: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
};

test('GET /v1/live needs a bearer token', async (t) => {
  const ta = await startApp(t);
  t.is((await ta.call('GET', '/v1/live', { token: null })).status, 401);
  t.is((await ta.call('GET', '/v1/live', { token: INGEST_TOKEN })).status, 401);
});

test('GET /v1/live on a quiet install: nothing under way, and the tick not run yet', async (t) => {
  const ta = await startApp(t);
  const body = await live(ta);
  t.deepEqual(body, {
    now: ta.clock.now().toISOString(),
    debounce: [],
    episodes: [],
    approvals: [],
    discovery: [],
    polls: [],
    investigations: [],
    study: [],
    leases: [],
    tick: { last_run_at: null, last_error: null, every_ms: 10_000 },
  });
  await ta.app.tick();
  t.is((await live(ta)).tick.last_run_at, ta.clock.now().toISOString());
});

test('GET /v1/live says which host process holds which lease: this one (here) or another, until when; a lease run out is gone', async (t) => {
  const ta = await startApp(t);
  const leases = new LeaseRepo(ta.app.db);
  const now = ta.clock.now().getTime();
  t.true(await leases.take('study', ta.app.study.study.holder, 60_000, now));
  t.true(await leases.take('poll:am', 'db-2:4711:3f2a9c1e', 30_000, now));
  const shown = (await live(ta)).leases as Array<{ name: string; holder: string; until: string; here: boolean }>;
  t.deepEqual(
    shown.sort((a, b) => a.name.localeCompare(b.name)),
    [
      { name: 'poll:am', holder: 'db-2:4711:3f2a9c1e', until: new Date(now + 30_000).toISOString(), here: false },
      { name: 'study', holder: ta.app.study.study.holder, until: new Date(now + 60_000).toISOString(), here: true },
    ],
  );
  t.regex(ta.app.study.study.holder, new RegExp(`^[^:]+:${process.pid}:study:[0-9a-f]{8}$`), '<host>:<pid>:<kind>:<random>');
  // The doctor says the same, by host process.
  const part = ((await ta.call('GET', '/v1/doctor?fresh=1')).body.components as Array<{ name: string; status: string; detail: string }>).find(
    (c) => c.name === 'leases',
  )!;
  t.is(part.status, 'ok');
  t.is(part.detail, `held now by this host (${hostname()}:${process.pid}): study; db-2:4711: poll:am`);
  ta.clock.advance(30 * SECOND);
  t.deepEqual(
    ((await live(ta)).leases as Array<{ name: string }>).map((l) => l.name),
    ['study'],
  );
});

test('GET /v1/live shows a debounce window, then the episode it opened, and a pending approval', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const opened = ta.clock.now();
  t.is((await push(ta, 'checkout')).status, 202);
  await ta.app.episodes.process();
  let body = await live(ta);
  t.deepEqual(body.debounce, [
    { service: 'checkout', alerts: 1, opened_at: opened.toISOString(), closes_at: new Date(opened.getTime() + 20 * SECOND).toISOString() },
  ]);
  t.deepEqual(body.episodes, []);

  ta.clock.advance(20 * SECOND);
  await ta.app.tick();
  body = await live(ta);
  t.deepEqual(body.debounce, []);
  t.is(body.episodes.length, 1);
  t.like(body.episodes[0], { service: 'checkout', kind: 'incident', alerts: ['HighErrorRate'], t_open: ta.clock.now().toISOString() });
  t.is(body.tick.last_run_at, ta.clock.now().toISOString());

  const raise = await ta.call('POST', '/v1/autonomy', { body: { service: 'checkout', level: 'L1', by: 'alice@bank.example' } });
  t.is(raise.status, 202, JSON.stringify(raise.body));
  body = await live(ta);
  t.is(body.approvals.length, 1);
  t.like(body.approvals[0], { kind: 'autonomy_raise', service: 'checkout', requested_by: 'alice@bank.example' });
  t.truthy(body.approvals[0].expires_at);
});
