import test from 'ava';
import { DAY, HOUR, MINUTE, TestClock } from '../../host/clock.ts';
import { licenceRef } from '../../host/licence/licence-check.ts';
import { VERSION } from '../../host/version.ts';
import { makeOperating, signLicence, startApp, type TestApp } from '../helpers/app.ts';
import { createTestStore } from '../helpers/db.ts';
import { closedAddress, startLicenceServer } from '../helpers/licence-server.ts';

const events = async (ta: TestApp, type: string) =>
  (await ta.call('GET', `/v1/ledger?type=${type}&order=asc&limit=2000`)).body.events as Array<{ type: string; data: any; reason: string }>;
const status = async (ta: TestApp) => (await ta.call('GET', '/v1/status', { token: null })).body;
const licencePart = async (ta: TestApp) => (await ta.call('GET', '/v1/doctor?fresh=1')).body.components.find((c: { name: string }) => c.name === 'licence');

/** Ticks every 6 hours (plus a minute) until `ms` has passed. */
async function runFor(ta: TestApp, ms: number): Promise<void> {
  for (let passed = 0; passed < ms; passed += 6 * HOUR + MINUTE) {
    ta.clock.advance(6 * HOUR + MINUTE);
    await ta.app.tick();
  }
}

test('auto: the server answers valid; the install sends licence, fingerprint and version; licence.confirmed is recorded', async (t) => {
  const fake = await startLicenceServer(t, 'valid');
  const ta = await startApp(t, { env: { SERVICE_LICENCE_SERVER: fake.url } });
  await makeOperating(ta);
  await ta.app.tick();
  t.is(fake.requests.length, 1);
  const licence = signLicence();
  const sent = fake.requests[0]!;
  t.is(sent.method, 'POST');
  t.is(sent.path, '/v1/confirm');
  t.deepEqual(sent.body, {
    licence_id: null,
    customer: 'Test Bank',
    tier: 'enterprise',
    signature: licence.signature,
    install: ta.app.identity.fingerprint,
    version: VERSION,
  });
  const confirmed = await events(ta, 'licence.confirmed');
  t.is(confirmed.length, 1);
  t.like(confirmed[0]!.data, { customer: 'Test Bank', tier: 'enterprise', server: fake.url });
  t.is((await status(ta)).mode, 'operating');
  const part = await licencePart(ta);
  t.is(part.status, 'ok');
  t.regex(part.detail, new RegExp(`last confirmed ${ta.clock.now().toISOString()}`));
  const row = await ta.app.db('licence_check').where({ id: 1 }).first();
  t.is(row.licence_ref, licenceRef(licence));
  t.is(row.last_result, 'valid');
});

test('confirmations are 6 hours apart by the injected clock', async (t) => {
  const fake = await startLicenceServer(t, 'valid');
  const ta = await startApp(t, { env: { SERVICE_LICENCE_SERVER: fake.url } });
  await makeOperating(ta);
  await ta.app.tick();
  t.is(fake.requests.length, 1);
  for (let i = 0; i < 5; i++) {
    ta.clock.advance(HOUR);
    await ta.app.tick();
  }
  t.is(fake.requests.length, 1, '5 hours later nothing more was asked');
  ta.clock.advance(HOUR);
  await ta.app.tick();
  t.is(fake.requests.length, 2, 'after 6 hours it asks again');
  await ta.app.tick();
  t.is(fake.requests.length, 2);
  t.is((await events(ta, 'licence.confirmed')).length, 2);
});

test('auto: the server answers revoked: licence.revoked, the licence counts as revoked and the install falls back to setup', async (t) => {
  const fake = await startLicenceServer(t, 'revoked');
  const ta = await startApp(t, { env: { SERVICE_LICENCE_SERVER: fake.url } });
  await makeOperating(ta);
  await ta.app.tick();
  const revoked = await events(ta, 'licence.revoked');
  t.is(revoked.length, 1);
  t.regex(revoked[0]!.reason, /revoked: refunded/);
  const s = await status(ta);
  t.like(s, { mode: 'setup', licence: { state: 'revoked', in_grace: false } });
  t.deepEqual((await events(ta, 'system.mode_changed')).map((e) => e.data).at(-1), { from: 'operating', to: 'setup' });
  t.is((await ta.call('GET', '/v1/episodes')).status, 503);
  t.is((await licencePart(ta)).status, 'fail');
  // A new licence is confirmed afresh and the install operates again.
  fake.answer = 'valid';
  t.is((await ta.call('POST', '/v1/licence', { body: { licence: signLicence({ id: 'renewed' }) } })).status, 200);
  t.is((await status(ta)).mode, 'operating');
  await ta.app.tick();
  t.is(fake.requests.length, 2);
  t.is(fake.requests[1]!.body.licence_id, 'renewed');
  t.is((await status(ta)).licence.state, 'valid');
});

test('auto: an unreachable server is recorded as licence.confirmation_failed and the install carries on', async (t) => {
  const ta = await startApp(t, { env: { SERVICE_LICENCE_SERVER: await closedAddress() } });
  await makeOperating(ta);
  await ta.app.tick();
  const failed = await events(ta, 'licence.confirmation_failed');
  t.is(failed.length, 1);
  t.like(failed[0]!.data, { mode: 'auto', result: 'unreachable', lapses_at: null });
  t.regex(failed[0]!.reason, /ECONNREFUSED/);
  await runFor(ta, 30 * DAY);
  const s = await status(ta);
  t.like(s, { mode: 'operating', licence: { state: 'valid' } });
  t.is((await licencePart(ta)).status, 'warn');
  t.is((await events(ta, 'licence.confirmation_failed')).length, 1 + Math.ceil((30 * DAY) / (6 * HOUR + MINUTE)), 'one attempt per 6-hour period');
});

test('strict: unconfirmed past the grace period falls back to setup, and a confirmation brings it back', async (t) => {
  const fake = await startLicenceServer(t, { status: 503, body: { error: 'maintenance' } });
  const ta = await startApp(t, { env: { SERVICE_LICENCE_SERVER: fake.url, SERVICE_LICENCE_CHECK: 'strict' } });
  await makeOperating(ta); // grace_days 14
  await ta.app.tick();
  const failed = await events(ta, 'licence.confirmation_failed');
  t.like(failed[0]!.data, { mode: 'strict', result: 'error' });
  t.is(failed[0]!.data.lapses_at, new Date(ta.clock.now().getTime() + 14 * DAY).toISOString());
  await runFor(ta, 13 * DAY);
  t.like(await status(ta), { mode: 'operating', licence: { state: 'valid' } }, 'within the grace it carries on');
  await runFor(ta, 2 * DAY);
  t.like(await status(ta), { mode: 'setup', licence: { state: 'unconfirmed', in_grace: false } });
  t.deepEqual((await events(ta, 'system.mode_changed')).map((e) => e.data).at(-1), { from: 'operating', to: 'setup' });
  const part = await licencePart(ta);
  t.is(part.status, 'fail');
  t.regex(part.fix, /licence server/);
  fake.answer = 'valid';
  await runFor(ta, 1);
  t.like(await status(ta), { mode: 'operating', licence: { state: 'valid' } });
  t.deepEqual((await events(ta, 'system.mode_changed')).map((e) => e.data).at(-1), { from: 'setup', to: 'operating' });
});

test('strict: a server that answers keeps the install operating for good', async (t) => {
  const fake = await startLicenceServer(t, 'valid');
  const ta = await startApp(t, { env: { SERVICE_LICENCE_SERVER: fake.url, SERVICE_LICENCE_CHECK: 'strict' } });
  await makeOperating(ta);
  await runFor(ta, 20 * DAY);
  t.like(await status(ta), { mode: 'operating', licence: { state: 'valid' } });
  t.true(fake.requests.length >= 20 * 4 - 1);
});

test('offline: never asks the server, and the install carries on', async (t) => {
  const fake = await startLicenceServer(t, 'revoked');
  const ta = await startApp(t, { env: { SERVICE_LICENCE_SERVER: fake.url, SERVICE_LICENCE_CHECK: 'offline' } });
  await makeOperating(ta);
  await ta.app.tick();
  await runFor(ta, 20 * DAY);
  t.is(fake.requests.length, 0);
  t.like(await status(ta), { mode: 'operating', licence: { state: 'valid' } });
  t.deepEqual(await events(ta, 'licence.'), []);
  t.regex((await licencePart(ta)).detail, /confirmation off \(SERVICE_LICENCE_CHECK=offline\)/);
});

test('a trial is not confirmed online (the licence server never issued it)', async (t) => {
  const fake = await startLicenceServer(t, 'revoked');
  const ta = await startApp(t, { env: { SERVICE_LICENCE_SERVER: fake.url, SERVICE_LICENCE_CHECK: 'strict' } });
  t.is((await ta.call('POST', '/v1/licence/redeem', { body: {} })).status, 201);
  await runFor(ta, 3 * DAY);
  t.is(fake.requests.length, 0);
  t.is((await status(ta)).licence.state, 'valid');
});

test('strict without SERVICE_LICENCE_SERVER is a configuration error', async (t) => {
  const { loadConfig } = await import('../../host/config.ts');
  t.throws(() => loadConfig({ SERVICE_LICENCE_CHECK: 'strict' }), { message: /SERVICE_LICENCE_CHECK=strict needs SERVICE_LICENCE_SERVER/ });
  t.throws(() => loadConfig({ SERVICE_LICENCE_SERVER: 'ftp://licences' }), { message: /SERVICE_LICENCE_SERVER must be an http\(s\) address/ });
  t.is(loadConfig({ SERVICE_LICENCE_SERVER: 'https://licences.vendor.example/' }).licenceServer, 'https://licences.vendor.example');
});

test('two host processes on one database ask once per period', async (t) => {
  const fake = await startLicenceServer(t, 'valid');
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  const clock = new TestClock('2026-06-01T00:00:00.000Z');
  const env = { SERVICE_LICENCE_SERVER: fake.url };
  const a = await startApp(t, { store, clock, env });
  await makeOperating(a);
  const b = await startApp(t, { store, clock, env });
  await Promise.all([a.app.tick(), b.app.tick(), a.app.tick(), b.app.tick()]);
  t.is(fake.requests.length, 1);
  clock.advance(6 * HOUR);
  await Promise.all([a.app.tick(), b.app.tick()]);
  t.is(fake.requests.length, 2);
  t.is((await events(a, 'licence.confirmed')).length, 2);
  // A revocation seen by one process is applied by the other on its next tick.
  fake.answer = 'revoked';
  clock.advance(6 * HOUR);
  await a.app.tick();
  await b.app.tick();
  t.is(fake.requests.length, 3);
  t.is((await status(b)).licence.state, 'revoked');
  t.is((await status(b)).mode, 'setup');
});
