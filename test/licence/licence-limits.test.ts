import test from 'ava';
import { MINUTE } from '../../host/clock.ts';
import { LicenceLimits, serviceLimit } from '../../host/licence/licence-limits.ts';
import { INGEST_TOKEN, signLicence, startApp, type TestApp } from '../helpers/app.ts';

const push = (ta: TestApp, ...services: string[]) =>
  ta.call('POST', '/v1/alerts/generic', {
    token: INGEST_TOKEN,
    body: { alerts: services.map((s) => ({ name: 'Down', service: s, severity: 'critical', status: 'firing', id: `down-${s}` })) },
  });
const addService = (ta: TestApp, name: string) => ta.call('PUT', '/v1/estate/overrides', { body: { services: { [name]: {} } } });
const events = async (ta: TestApp, type: string) => (await ta.call('GET', `/v1/ledger?type=${type}&order=asc&limit=2000`)).body.events as any[];

async function operatingWith(t: Parameters<typeof startApp>[0], licence: Parameters<typeof signLicence>[0]): Promise<TestApp> {
  const ta = await startApp(t);
  t.is((await ta.call('POST', '/v1/licence', { body: { licence: signLicence(licence) } })).status, 200);
  t.is((await ta.call('POST', '/v1/auth/bootstrap', { body: { email: 'owner@bank.example', name: 'Owner' } })).status, 201);
  return ta;
}

test('tier limits: Starter and the trial 50, Enterprise its own number, Strategic unlimited', (t) => {
  t.is(serviceLimit({ tier: 'starter', services: 50 }), 50);
  t.is(serviceLimit({ tier: 'starter', services: 500 }), 50, 'a Starter licence never allows more than 50');
  t.is(serviceLimit({ tier: 'trial', services: 50 }), 50);
  t.is(serviceLimit({ tier: 'enterprise', services: 400 }), 400);
  t.is(serviceLimit({ tier: 'enterprise', services: null }), 250);
  t.is(serviceLimit({ tier: 'strategic', services: null }), null);
  t.is(serviceLimit(null), 0);
  const starter = LicenceLimits.of({ tier: 'starter', services: 50 });
  t.true(starter.allows(50));
  t.false(starter.allows(51));
  t.true(LicenceLimits.of({ tier: 'strategic', services: null }).allows(1_000_000));
  t.true(LicenceLimits.of({ tier: 'enterprise', services: 250 }).allows(250));
  t.false(LicenceLimits.of({ tier: 'enterprise', services: 250 }).allows(251));
});

test('estate services beyond the limit (after a smaller licence) are left out of the known services and reported once; alerts never count', async (t) => {
  const ta = await operatingWith(t, { tier: 'enterprise', services: 5 });
  for (const s of ['alpha', 'bravo', 'charlie', 'delta', 'echo']) {
    t.is((await addService(ta, s)).status, 200);
    ta.clock.advance(MINUTE);
  }
  // Alerts of services no person added count for nothing, and are never dropped.
  const res = await push(ta, 'foxtrot', 'golf');
  t.is(res.status, 202);
  t.is(res.body.accepted, 2, 'alerts are never dropped');
  await ta.app.tick();
  t.deepEqual(await events(ta, 'licence.limit_reached'), [], 'within the limit nothing is reported');
  t.is((await ta.call('POST', '/v1/licence', { body: { licence: signLicence({ tier: 'starter', services: 3 }) } })).status, 200);
  await ta.app.tick();
  await ta.app.tick();
  const reached = await events(ta, 'licence.limit_reached');
  t.deepEqual(reached.map((e) => e.data.service).sort(), ['delta', 'echo'], 'the latest added are beyond the limit');
  t.like(reached[0].data, { services_allowed: 3, services_used: 5 });
  t.deepEqual(await ta.app.serviceLimits.knownServices(), ['alpha', 'bravo', 'charlie', 'foxtrot', 'golf'], 'alert-named services stay known to autonomy');
  t.true(await ta.app.serviceLimits.allowed('alpha'));
  t.false(await ta.app.serviceLimits.allowed('echo'));
  t.false(await ta.app.serviceLimits.allowed('hotel'));
  const status = (await ta.call('GET', '/v1/status', { token: null })).body;
  t.like(status.licence, { state: 'valid', services_used: 5, services_allowed: 3 });
  const doctor = (await ta.call('GET', '/v1/doctor?fresh=1')).body;
  const licence = doctor.components.find((c: { name: string }) => c.name === 'licence');
  t.is(licence.status, 'warn');
  t.regex(licence.detail, /2 services beyond the licence .*: delta, echo/);
  // Another tick reports nothing new; a further add is refused naming the tier.
  await ta.app.tick();
  t.is((await events(ta, 'licence.limit_reached')).length, 2);
  const over = await addService(ta, 'hotel');
  t.is(over.status, 409);
  t.is(over.body.error, 'licence_limit');
});

test('a Strategic licence is unlimited; status shows null as services_allowed', async (t) => {
  const ta = await operatingWith(t, { tier: 'strategic', services: null, installs: null });
  for (const s of ['a', 'b', 'c']) t.is((await addService(ta, s)).status, 200);
  await ta.app.tick();
  t.like((await ta.call('GET', '/v1/status', { token: null })).body.licence, { services_used: 3, services_allowed: null });
  t.deepEqual(await events(ta, 'licence.limit_reached'), []);
  t.deepEqual(await ta.app.serviceLimits.knownServices(), ['a', 'b', 'c']);
});
