import test from 'ava';
import { startApp } from '../helpers/app.ts';

test('GET /health answers ok without a token', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('GET', '/health', { token: null });
  t.is(res.status, 200);
  t.deepEqual(res.body, { status: 'ok' });
});

test('GET /v1/status answers the whole status object without a token', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('GET', '/v1/status', { token: null });
  t.is(res.status, 200);
  t.deepEqual(Object.keys(res.body).sort(), ['auth', 'fingerprint', 'ledger_checkpoint', 'ledger_head', 'licence', 'mode', 'setup', 'version']);
  t.is(res.body.mode, 'setup');
  t.deepEqual(res.body.licence, { state: 'none', customer: null, expires_at: null, in_grace: false, services_used: 0, services_allowed: 0 });
  t.deepEqual(res.body.ledger_head, { seq: 0, hash: '0'.repeat(64) });
  t.is(res.body.ledger_checkpoint, null);
  t.deepEqual(res.body.auth, { sso: { mode: 'off', label: null, local: true }, break_glass: { open: false, reason: null }, email_codes: 'off' });
  t.is(res.body.setup.next, 'licence');
  t.regex(res.body.fingerprint, /^[0-9a-f]{4}(-[0-9a-f]{4}){7}$/);
});

test('the fingerprint is stable across restarts of the same install', async (t) => {
  const first = await startApp(t, { keepStore: true });
  const before = (await first.call('GET', '/v1/status')).body.fingerprint;
  await first.app.close();
  const second = await startApp(t, { store: first.store });
  t.teardown(() => first.store.cleanup());
  t.is((await second.call('GET', '/v1/status')).body.fingerprint, before);
});

test('the console placeholder is served on the same port', async (t) => {
  const ta = await startApp(t);
  const res = await fetch(ta.base + '/');
  t.is(res.status, 200);
  t.regex(await res.text(), /<html/);
});
