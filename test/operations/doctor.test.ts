import test from 'ava';
import { MINUTE } from '../../host/clock.ts';
import { INGEST_TOKEN, makeOperating, startApp, type TestApp } from '../helpers/app.ts';
import { closedAddress } from '../helpers/licence-server.ts';

const doctor = async (ta: TestApp) => {
  const res = await ta.call('GET', '/v1/doctor?fresh=1');
  if (res.status !== 200) throw new Error(`GET /v1/doctor: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { ok: boolean; checks: any[]; components: Array<{ name: string; status: string; detail: string; fix: string | null }> };
};
const byName = (report: Awaited<ReturnType<typeof doctor>>) => Object.fromEntries(report.components.map((c) => [c.name, c]));

test('GET /v1/doctor?fresh=1 reports every component with a status and a fix hint', async (t) => {
  const ta = await startApp(t);
  const report = await doctor(ta);
  t.deepEqual(
    report.components.map((c) => c.name),
    ['database', 'ledger', 'plugins', 'connectors', 'mail', 'licence', 'schedules', 'notifications', 'autonomy', 'digest', 'keychain', 'witness', 'leases'],
  );
  t.true(report.ok, 'warnings only');
  for (const c of report.components) {
    t.true(['ok', 'warn', 'fail'].includes(c.status), c.name);
    t.is(typeof c.detail, 'string', c.name);
    if (c.status === 'ok') t.is(c.fix, null, c.name);
    else t.true(typeof c.fix === 'string' && c.fix.length > 0, c.name);
  }
  const parts = byName(report);
  t.like(parts.database, { status: 'ok', fix: null });
  t.like(parts.keychain, { status: 'ok', detail: 'no keychain: the licence has none', fix: null });
  t.like(parts.witness, { status: 'ok', detail: 'no ledger witness configured (SERVICE_LEDGER_WITNESS)', fix: null });
  t.like(parts.ledger, { status: 'ok' });
  t.like(parts.connectors, { status: 'warn' });
  t.regex(parts.connectors!.detail, /no connectors configured/);
  t.like(parts.mail, { status: 'warn' });
  t.regex(parts.mail!.detail, /break-glass is open/);
  t.like(parts.licence, { status: 'warn' });
  t.regex(parts.licence!.detail, /licence none/);
  t.regex(parts.licence!.fix!, /POST \/v1\/licence/);
  t.like(parts.schedules, { status: 'warn', detail: 'the background tick has not run yet in this process' });
  t.like(parts.notifications, { status: 'warn' });
  t.regex(parts.notifications!.detail, /no on-call recipients are configured/);
  t.regex(parts.notifications!.fix!, /PUT \/v1\/settings\/notifications/);
  t.deepEqual(
    report.checks.map((c) => c.name),
    ['database', 'migrations', 'plugins', 'ledger', 'tokens'],
    'the first checks are unchanged',
  );
});

test('doctor: licence, schedules and confirmation as an operating install sees them', async (t) => {
  const ta = await startApp(t, { env: { SERVICE_LICENCE_SERVER: await closedAddress() } });
  await makeOperating(ta);
  await ta.app.tick();
  let parts = byName(await doctor(ta));
  t.like(parts.schedules, { status: 'ok', detail: `the background tick last ran at ${ta.clock.now().toISOString()}`, fix: null });
  t.like(parts.licence, { status: 'warn' });
  t.regex(
    parts.licence!.detail,
    /licence valid \(Test Bank, enterprise, expires 2027-01-01T00:00:00.000Z\); 0 of 250 services; confirmation auto: last confirmed never, last attempt unreachable/,
  );
  t.regex(parts.licence!.fix!, /let the service reach http:\/\/127\.0\.0\.1:\d+/);
  ta.clock.advance(2 * MINUTE);
  parts = byName(await doctor(ta));
  t.like(parts.schedules, { status: 'fail' });
  t.regex(parts.schedules!.detail, /last ran at .* \(120 s ago\)/);
  t.regex(parts.schedules!.fix!, /stalled/);
});

test('doctor: a connector with a problem fails the connectors component, naming it and its last problem', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const url = await closedAddress();
  t.is((await ta.call('PUT', '/v1/connectors/web', { body: { kind: 'http', settings: { base_url: url } } })).status, 201);
  let parts = byName(await doctor(ta));
  t.like(parts.connectors, { status: 'warn' });
  t.regex(parts.connectors!.detail, /not checked yet: web/);
  await ta.call('POST', '/v1/connectors/web/check');
  const report = await doctor(ta);
  parts = byName(report);
  t.false(report.ok);
  t.like(parts.connectors, { status: 'fail' });
  t.regex(parts.connectors!.detail, /1 connector: 0 ok, 1 with a problem, 0 unchecked; web \(http\): /);
  t.regex(parts.connectors!.fix!, /oncall connectors check <name>/);
});

test('doctor: a tampered ledger fails the ledger component with a fix', async (t) => {
  const ta = await startApp(t);
  for (let i = 0; i < 2; i++) await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: { type: 'human.deploy', actor: 'ops', reason: `step ${i}` } });
  await ta.app.db('ledger_events').where({ seq: 1 }).update({ reason: 'changed' });
  const report = await doctor(ta);
  t.false(report.ok);
  const parts = byName(report);
  t.like(parts.ledger, { status: 'fail' });
  t.regex(parts.ledger!.fix!, /ledger-verify/);
});
