import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import test from 'ava';
import { DAY } from '../../host/clock.ts';
import { route } from '../../host/http/respond.ts';
import { makeOperating, signLicence, startApp, type TestApp } from '../helpers/app.ts';

const types = async (ta: TestApp) => (await ta.call('GET', '/v1/ledger?order=asc')).body.events.map((e: { type: string }) => e.type);

test('installing a vendor-signed licence moves the install from setup to configuring, with ledger events', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('POST', '/v1/licence', { body: { licence: signLicence({ customer: 'Acme Bank' }) } });
  t.is(res.status, 200);
  t.like(res.body.licence, { state: 'valid', customer: 'Acme Bank', in_grace: false });
  const status = (await ta.call('GET', '/v1/status')).body;
  t.is(status.mode, 'configuring');
  t.deepEqual(status.licence, {
    state: 'valid',
    customer: 'Acme Bank',
    expires_at: '2027-01-01T00:00:00.000Z',
    in_grace: false,
    services_used: 0,
    services_allowed: 250,
  });
  t.is(status.setup.next, 'owner');
  t.deepEqual(await types(ta), ['config.licence_installed', 'system.mode_changed']);
  const change = (await ta.call('GET', '/v1/ledger?type=system.mode_changed')).body.events[0];
  t.deepEqual(change.data, { from: 'setup', to: 'configuring' });
});

test('a licence with a bad signature, shape or binding answers 400 bad_licence and changes nothing', async (t) => {
  const ta = await startApp(t);
  const good = signLicence();
  const otherKey = generateKeyPairSync('ed25519').privateKey;
  const { tier: _tier, ...noTier } = good;
  const bad: unknown[] = [
    { ...good, customer: 'Someone Else' },
    signLicence({}, otherKey),
    noTier,
    { ...good, signature: 'not base64 at all!' },
    signLicence({ install: '0000-0000-0000-0000-0000-0000-0000-0000' }),
    signLicence({ expires_at: '2025-01-01T00:00:00.000Z' }),
  ];
  for (const licence of bad) {
    const res = await ta.call('POST', '/v1/licence', { body: { licence } });
    t.is(res.status, 400);
    t.is(res.body.error, 'bad_licence');
    t.is(typeof res.body.message, 'string');
  }
  t.is((await ta.call('POST', '/v1/licence', { body: { licence: 'text' } })).body.error, 'invalid_body');
  t.is((await ta.call('POST', '/v1/licence', { body: {} })).body.error, 'invalid_body');
  t.is((await ta.call('GET', '/v1/status')).body.mode, 'setup');
  t.is((await ta.app.ledger.head()).seq, 0, 'nothing was recorded');
});

test('a licence bound to this install is accepted', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('POST', '/v1/licence', { body: { licence: signLicence({ install: ta.app.identity.fingerprint }) } });
  t.is(res.status, 200);
});

test('installing a licence needs the owner (admin token) and no token is 401', async (t) => {
  const ta = await startApp(t);
  t.is((await ta.call('POST', '/v1/licence', { token: null, body: { licence: signLicence() } })).status, 401);
  t.is((await ta.call('POST', '/v1/licence/redeem', { token: null, body: {} })).status, 401);
});

test('a licence whose row is edited in the database no longer counts', async (t) => {
  const ta = await startApp(t);
  await ta.call('POST', '/v1/licence', { body: { licence: signLicence() } });
  const row = await ta.app.db('licences').first();
  await ta.app
    .db('licences')
    .where({ id: row.id })
    .update({ body: row.body.replace('"services":250', '"services":100000') });
  const status = (await ta.call('GET', '/v1/status')).body;
  t.is(status.licence.state, 'invalid');
  t.is(status.mode, 'setup');
});

test('the trial starts once, for 30 days, bound to this install, and survives a restart', async (t) => {
  const first = await startApp(t, { keepStore: true });
  const res = await first.call('POST', '/v1/licence/redeem', { body: { customer: 'Pilot Insurer' } });
  t.is(res.status, 201);
  t.like(res.body.licence, { state: 'valid', customer: 'Pilot Insurer', expires_at: new Date(first.clock.now().getTime() + 30 * DAY).toISOString() });
  const again = await first.call('POST', '/v1/licence/redeem', { body: {} });
  t.is(again.status, 409);
  t.is(again.body.error, 'trial_already_used');
  t.deepEqual(await types(first), ['config.trial_started', 'system.mode_changed']);
  await first.app.close();
  const second = await startApp(t, { store: first.store, clock: first.clock });
  t.teardown(() => first.store.cleanup());
  t.is((await second.call('GET', '/v1/status')).body.licence.state, 'valid');
  t.is((await second.call('POST', '/v1/licence/redeem', { body: {} })).status, 409);
});

test('an expired licence is in grace for its grace days, then the mode falls back to setup, recorded once', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  t.is((await ta.call('GET', '/v1/status')).body.mode, 'operating');
  ta.clock.set('2027-01-02T00:00:00.000Z');
  let status = (await ta.call('GET', '/v1/status')).body;
  t.deepEqual([status.mode, status.licence.state, status.licence.in_grace], ['operating', 'grace', true]);
  ta.clock.set('2027-01-15T00:00:01.000Z');
  status = (await ta.call('GET', '/v1/status')).body;
  t.deepEqual([status.mode, status.licence.state, status.licence.in_grace], ['setup', 'expired', false]);
  await ta.app.tick();
  await ta.app.tick();
  const changes = (await ta.call('GET', '/v1/ledger?type=system.mode_changed&order=asc')).body.events.map((e: { data: unknown }) => e.data);
  t.deepEqual(changes, [
    { from: 'setup', to: 'configuring' },
    { from: 'configuring', to: 'operating' },
    { from: 'operating', to: 'setup' },
  ]);
  const renewed = await ta.call('POST', '/v1/licence', { body: { licence: signLicence({ expires_at: '2028-01-01T00:00:00.000Z' }) } });
  t.is(renewed.status, 200);
  t.is((await ta.call('GET', '/v1/status')).body.mode, 'operating');
});

test('endpoints that need operating answer 503 not_operating until the install is operating', async (t) => {
  const ta = await startApp(t);
  ta.app.server.get(
    '/v1/test-operating',
    route(ta.app.log, async () => {
      await ta.app.guard.operating();
      return [200, { ok: true }];
    }),
  );
  t.deepEqual((await ta.call('GET', '/v1/test-operating')).body, { error: 'not_operating' });
  await ta.call('POST', '/v1/licence', { body: { licence: signLicence() } });
  t.is((await ta.call('GET', '/v1/test-operating')).status, 503);
  await ta.call('POST', '/v1/auth/bootstrap', { body: { email: 'owner@bank.example', name: 'Owner' } });
  t.is((await ta.call('GET', '/v1/test-operating')).status, 200);
});

function configDirWith(licence: unknown): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'oncall-config-'));
  writeFileSync(path.join(dir, 'licence.json'), JSON.stringify(licence));
  return dir;
}

test('a licence mounted from licence.json is in force and the API answers 409 to changes', async (t) => {
  const ta = await startApp(t, { env: { SERVICE_CONFIG_DIR: configDirWith(signLicence({ customer: 'File Bank' })) } });
  const status = (await ta.call('GET', '/v1/status')).body;
  t.is(status.licence.customer, 'File Bank');
  t.is(status.mode, 'configuring');
  for (const [path, body] of [
    ['/v1/licence', { licence: signLicence() }],
    ['/v1/licence/redeem', {}],
  ] as const) {
    const res = await ta.call('POST', path, { body });
    t.is(res.status, 409);
    t.is(res.body.error, 'licence_file_managed');
  }
});

test('a mounted licence.json with a bad signature leaves the install in setup with state invalid', async (t) => {
  const ta = await startApp(t, { env: { SERVICE_CONFIG_DIR: configDirWith({ ...signLicence(), customer: 'Forged' }) } });
  const status = (await ta.call('GET', '/v1/status')).body;
  t.is(status.licence.state, 'invalid');
  t.is(status.mode, 'setup');
});
