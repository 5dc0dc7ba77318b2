import test from 'ava';
import { SECOND } from '../host/clock.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from './helpers/app.ts';

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
    tick: { last_run_at: null, last_error: null, every_ms: 10_000 },
  });
  await ta.app.tick();
  t.is((await live(ta)).tick.last_run_at, ta.clock.now().toISOString());
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
