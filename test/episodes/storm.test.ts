// Issue 22, item 7: what one source can open is bounded. Beyond SERVICE_STORM_PER_SOURCE new
// episodes a minute for services the estate does not have (and SERVICE_STORM_PER_SERVICE for one
// such service), alerts join the source's one storm episode, visible with its counts; services the
// estate has always open their own. On the injected clock, with concurrent pushes; on SQLite and
// on MariaDB (TEST_DATABASE_URL). Two host processes: test/episodes/storm-processes.test.ts.
import test from 'ava';
import { MINUTE, SECOND } from '../../host/clock.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';

async function app(t: Parameters<typeof startApp>[0]): Promise<TestApp> {
  const ta = await startApp(t, { env: { SERVICE_STORM_PER_SOURCE: '5', SERVICE_STORM_PER_SERVICE: '2' }, manualTick: true });
  await makeOperating(ta);
  const put = await ta.call('PUT', '/v1/estate/overrides', { body: { services: { payments: { owner: 'owner@bank.example', tier: 1 } } } });
  t.is(put.status, 200, JSON.stringify(put.body));
  return ta;
}

const push = (ta: TestApp, source: string, body: unknown) => ta.call('POST', `/v1/alerts/${source}`, { token: INGEST_TOKEN, body });
const episodes = async (ta: TestApp, query = '') =>
  (await ta.call('GET', `/v1/episodes?limit=500${query === '' ? '' : `&query=${encodeURIComponent(query)}`}`)).body.episodes as any[];

test('thirty unknown services pushed at once from one source open five episodes; the rest join one storm with its counts, and a known service still opens its own', async (t) => {
  const ta = await app(t);
  const pushes = Array.from({ length: 30 }, (_, i) => push(ta, 'generic', { name: 'Down', service: `svc-${i}`, severity: 'warning', id: `a${i}` }));
  for (const r of await Promise.all(pushes)) t.is(r.status, 202);
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  t.is((await push(ta, 'generic', { name: 'PaymentsDown', service: 'payments', severity: 'critical', id: 'pay' })).status, 202);
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();

  const all = await episodes(ta);
  const storms = all.filter((e) => e.kind === 'storm');
  t.is(storms.length, 1);
  t.like(storms[0], { service: 'storm:generic', state: 'open', storm: { source: 'generic', alerts: 25, services: 25 } });
  t.is(all.filter((e) => e.kind !== 'storm' && e.service.startsWith('svc-')).length, 5, 'five a minute from one source');
  t.is(all.filter((e) => e.service === 'payments').length, 1, 'a service the estate has always opens its own');
  t.is((await episodes(ta, 'kind:storm')).length, 1);
  const detail = (await ta.call('GET', `/v1/episodes/${storms[0].id}`)).body;
  t.like(detail.storm, { source: 'generic', alerts: 25, services: 25 });
  t.is(detail.storm.held.length, 25);
  t.regex(detail.note, /^Alert storm from generic: generic opened 5 episodes in the last minute/);
  t.true(detail.timeline.some((e: any) => e.type === 'episode.storm_joined'));
  t.is(detail.investigation, null, 'a storm is not investigated');
  // The incident group lists storms too (the console's Incidents page and Home use it).
  t.true((await ta.call('GET', '/v1/episodes?group=incident&limit=100')).body.episodes.some((e: any) => e.kind === 'storm'));

  // Later alerts of a service the storm holds join it; a new unknown name after the minute opens its own.
  t.is((await push(ta, 'generic', { name: 'Again', service: 'svc-29', severity: 'critical', id: 'again' })).status, 202);
  ta.clock.advance(MINUTE);
  t.is((await push(ta, 'generic', { name: 'Down', service: 'svc-new', severity: 'warning', id: 'new' })).status, 202);
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  const later = (await ta.call('GET', `/v1/episodes/${storms[0].id}`)).body;
  t.like(later.storm, { alerts: 26, services: 25 });
  t.is(later.severity, 'critical');
  t.is((await episodes(ta, 'service:svc-new')).length, 1);
  t.true((await ta.app.verifyLedger()).ok);
});

test('one unknown service opens at most SERVICE_STORM_PER_SERVICE episodes a minute; past that its alerts join the storm', async (t) => {
  const ta = await app(t);
  for (let i = 0; i < 3; i++) {
    t.is((await push(ta, 'generic', { name: 'Flap', service: 'flappy', severity: 'warning', id: `f${i}` })).status, 202);
    ta.clock.advance(20 * SECOND);
    await ta.app.episodes.process();
    t.is((await push(ta, 'generic', { name: 'Flap', service: 'flappy', severity: 'warning', status: 'resolved', id: `f${i}` })).status, 202);
    await ta.app.episodes.process();
  }
  const own = (await episodes(ta, 'service:flappy')).length;
  t.is(own, 2);
  const storm = (await episodes(ta, 'kind:storm'))[0];
  t.like(storm.storm, { alerts: 1, services: 1 });
  t.regex((await ta.call('GET', `/v1/episodes/${storm.id}`)).body.note, /flappy opened 2 episodes in the last minute/);
  // One service's limit holds back that service only: another of the same source still opens its own.
  t.is((await push(ta, 'generic', { name: 'Down', service: 'steady', severity: 'warning', id: 'steady' })).status, 202);
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  t.is((await episodes(ta, 'service:steady')).length, 1);
  t.like((await episodes(ta, 'kind:storm'))[0].storm, { alerts: 1, services: 1 });
});

test('without a storm the limits change nothing: five unknown services from one source open five episodes', async (t) => {
  const ta = await app(t);
  for (let i = 0; i < 5; i++) t.is((await push(ta, 'datadog-like', { name: 'Down', service: `quiet-${i}`, severity: 'warning' })).status, 202);
  ta.clock.advance(20 * SECOND);
  await ta.app.episodes.process();
  t.is((await episodes(ta)).length, 5);
  t.deepEqual(await episodes(ta, 'kind:storm'), []);
});
