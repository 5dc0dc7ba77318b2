import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { INGEST_TOKEN, serviceEnv, signLicence, startApp, type TestApp } from '../helpers/app.ts';
import { createTestStore, type TestStore } from '../helpers/db.ts';
import { json, oncall, ROOT } from '../helpers/cli.ts';
import { closedPort } from '../helpers/ports.ts';

const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

async function appendEvents(ta: TestApp, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await ta.call('POST', '/v1/events', { token: INGEST_TOKEN, body: { type: 'human.deploy', actor: 'release-pipeline', reason: `step ${i}` } });
    if (res.status !== 201) throw new Error(`append failed: ${JSON.stringify(res.body)}`);
  }
}

/** Rewrites an event behind the ledger's back, as someone with database access could. */
const tamper = (ta: TestApp, seq: number) => ta.app.db('ledger_events').where({ seq }).update({ reason: 'nothing to see here' });

/** A store no service ever started on, cleaned up after the test. */
async function emptyStore(t: { teardown(fn: () => Promise<void>): void }): Promise<TestStore> {
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  return store;
}

// version

test('version prints the package version, and as JSON with --json', async (t) => {
  const human = await oncall(['version']);
  t.is(human.code, 0);
  t.true(human.stdout.startsWith(VERSION));
  const machine = await oncall(['version', '--json']);
  t.is(machine.code, 0);
  t.is(json(machine).version, VERSION);
});

test('an unknown command or flag exits 2', async (t) => {
  t.is((await oncall(['no-such-command'])).code, 2);
  t.is((await oncall(['version', '--no-such-flag'])).code, 2);
});

// fingerprint

test('fingerprint prints the same fingerprint as GET /v1/status', async (t) => {
  const ta = await startApp(t);
  const status = await ta.call('GET', '/v1/status', { token: null });
  const human = await oncall(['fingerprint'], ta.env);
  t.is(human.code, 0, human.stderr);
  t.is(human.stdout.trim(), status.body.fingerprint);
  const machine = await oncall(['fingerprint', '--json'], ta.env);
  t.deepEqual(json(machine), { fingerprint: status.body.fingerprint });
});

test('fingerprint on an install that never started exits 1, says to start it, and creates nothing', async (t) => {
  const store = await emptyStore(t);
  const res = await oncall(['fingerprint'], serviceEnv(store));
  t.is(res.code, 1);
  t.regex(res.stderr, /this install has not started yet.*run npm start once/);
  t.false(existsSync(path.join(store.dataDir, 'service.db')));
  t.false(existsSync(path.join(store.dataDir, 'secret.key')));
  const machine = await oncall(['fingerprint', '--json'], serviceEnv(store));
  t.is(machine.code, 1);
  t.like(json(machine), { ok: false, error: 'not_started' });
});

test('a bad SERVICE_* variable is a configuration error: exit 2 naming it', async (t) => {
  const res = await oncall(['fingerprint'], { SERVICE_PORT: 'eighty' });
  t.is(res.code, 2);
  t.regex(res.stderr, /SERVICE_PORT must be a whole number/);
});

// ledger-verify

test('ledger-verify exits 0 on an intact chain', async (t) => {
  const ta = await startApp(t);
  await appendEvents(ta, 3);
  const human = await oncall(['ledger-verify'], ta.env);
  t.is(human.code, 0, human.stderr);
  t.regex(human.stdout, /^ok: chain verified: 3 events, head seq 3/);
  const machine = await oncall(['ledger-verify', '--json'], ta.env);
  t.is(machine.code, 0);
  t.like(json(machine), { ok: true, checked: 3, first_bad_seq: null, head: { seq: 3 } });
});

test('ledger-verify exits 1 on a tampered chain, naming the first bad seq', async (t) => {
  const ta = await startApp(t);
  await appendEvents(ta, 3);
  await tamper(ta, 2);
  const human = await oncall(['ledger-verify'], ta.env);
  t.is(human.code, 1);
  t.regex(human.stdout, /BROKEN: chain broken at seq 2: an event was changed after it was written/);
  t.regex(human.stdout, /first bad seq: 2/);
  const machine = await oncall(['ledger-verify', '--json'], ta.env);
  t.is(machine.code, 1);
  t.like(json(machine), { ok: false, first_bad_seq: 2, problem: 'hash_mismatch' });
});

// doctor

// These judge the CLI's own checks (--local); test/cli/cli-doctor.test.ts covers asking the service.

test('doctor --json reports all five checks and ok on a healthy install', async (t) => {
  const ta = await startApp(t);
  await appendEvents(ta, 2);
  const res = await oncall(['doctor', '--local', '--json'], ta.env);
  t.is(res.code, 0, res.stdout + res.stderr);
  const report = json(res);
  t.true(report.ok);
  t.deepEqual(
    report.checks.map((c: { name: string }) => c.name),
    ['database', 'migrations', 'plugins', 'ledger', 'tokens'],
  );
  for (const c of report.checks) t.like(c, { ok: true, level: 'ok' }, c.name);
  t.false(res.stdout.includes(INGEST_TOKEN), 'no token is printed');
  const human = await oncall(['doctor', '--local'], ta.env);
  t.is(human.code, 0);
  t.regex(human.stdout, /all 5 checks passed/);
});

test('doctor exits 1 on a database with a pending migration and a broken chain, and only warns when ingest is off', async (t) => {
  const ta = await startApp(t);
  await appendEvents(ta, 2);
  const last = (await ta.app.db('knex_migrations').orderBy('id', 'desc').first()) as { name: string };
  await ta.app.db('knex_migrations').where({ name: last.name }).del();
  await tamper(ta, 1);
  const res = await oncall(['doctor', '--local', '--json'], { ...ta.env, SERVICE_INGEST_TOKEN: undefined });
  t.is(res.code, 1);
  const report = json(res);
  t.false(report.ok);
  const byName = Object.fromEntries(report.checks.map((c: { name: string }) => [c.name, c]));
  t.like(byName.migrations, { ok: false, level: 'fail', detail: '1 migration pending: start the service once (npm start) to apply them' });
  t.like(byName.ledger, { ok: false, level: 'fail' });
  t.regex(byName.ledger.detail, /broken at seq 1/);
  t.like(byName.tokens, { ok: true, level: 'warn' });
  t.regex(byName.tokens.detail, /^judged by this CLI process's environment \(not the running service's\): .*SERVICE_INGEST_TOKEN is unset here/);
  t.like(byName.database, { ok: true });
});

test('doctor counts an admin token generated at first start as configured, and fails when there is none', async (t) => {
  const ta = await startApp(t, { env: { SERVICE_ADMIN_TOKEN: undefined } });
  const generated = ta.app.adminTokenToPrint!;
  const tokens = async () => json(await oncall(['doctor', '--local', '--json'], ta.env)).checks.find((c: { name: string }) => c.name === 'tokens');
  t.like(await tokens(), {
    ok: true,
    level: 'ok',
    detail:
      "judged by this CLI process's environment (not the running service's): admin token generated at first start (only its hash is stored); ingest token set by SERVICE_INGEST_TOKEN",
  });
  await ta.app.db('install').update({ admin_token_hash: null });
  const none = await oncall(['doctor', '--local'], ta.env);
  t.is(none.code, 1);
  t.regex(none.stdout, /FAIL {2}tokens {6}judged by this CLI process's environment \(not the running service's\): no admin token: set SERVICE_ADMIN_TOKEN/);
  t.false(none.stdout.includes(generated), 'no token is printed');
});

test('doctor reports an unreachable database and skips the checks that need it', async (t) => {
  const store = await emptyStore(t);
  const port = await closedPort();
  const res = await oncall(
    ['doctor', '--local', '--json'],
    serviceEnv(store, { SERVICE_DATABASE_URL: `mysql://oncall:hunter2-password@127.0.0.1:${port}/oncall` }),
  );
  t.is(res.code, 1);
  const report = json(res);
  t.false(report.ok);
  t.like(report.checks[0], { name: 'database', ok: false, level: 'fail' });
  t.regex(report.checks[0].detail, new RegExp(`cannot reach the database \\(MySQL 127.0.0.1:${port}/oncall\\)`));
  t.like(report.checks[1], { name: 'migrations', ok: false, detail: 'not checked: the database is unreachable' });
  t.like(report.checks[2], { name: 'plugins', ok: true });
  t.false(res.stdout.includes('hunter2'), 'the database password is never printed');
});

// health

test('health reports a running service as ok', async (t) => {
  const ta = await startApp(t);
  const human = await oncall(['health', '--url', ta.base], ta.env);
  t.is(human.code, 0, human.stderr);
  t.regex(human.stdout, new RegExp(`ok: ${ta.base} is up`));
  t.regex(human.stdout, /mode\s+setup/);
  const machine = await oncall(['health', '--url', ta.base, '--json'], ta.env);
  t.like(json(machine), { ok: true, health: { status: 'ok' }, status: { version: VERSION, mode: 'setup' } });
});

test('health exits 1 with a clear message when nothing listens on the port', async (t) => {
  const port = await closedPort();
  const res = await oncall(['health', '--url', `http://127.0.0.1:${port}`]);
  t.is(res.code, 1);
  t.regex(res.stderr, new RegExp(`cannot reach the service at http://127.0.0.1:${port}: ECONNREFUSED`));
  const byPort = await oncall(['health', '--json'], { SERVICE_PORT: String(port) });
  t.is(byPort.code, 1);
  t.like(json(byPort), { ok: false, url: `http://127.0.0.1:${port}` });
});

// licence-verify

test('licence-verify exits 0 for a licence signed by a known vendor key and prints what it grants', async (t) => {
  const store = await emptyStore(t);
  const file = path.join(store.dataDir, 'licence.json');
  writeFileSync(file, JSON.stringify(signLicence({ customer: 'Test Bank', tier: 'strategic', expires_at: '2099-01-01T00:00:00.000Z' })));
  const human = await oncall(['licence-verify', file], serviceEnv(store));
  t.is(human.code, 0, human.stderr);
  t.regex(human.stdout, /customer\s+Test Bank/);
  t.regex(human.stdout, /tier\s+strategic/);
  t.regex(human.stdout, /expires\s+2099-01-01T00:00:00.000Z/);
  t.regex(human.stdout, /state\s+valid/);
  const machine = await oncall(['licence-verify', file, '--json'], serviceEnv(store));
  t.like(json(machine), { ok: true, status: { state: 'valid', customer: 'Test Bank', tier: 'strategic' } });
});

test('licence-verify exits 1 for a tampered licence, and for one without the vendor key that signed it', async (t) => {
  const store = await emptyStore(t);
  const file = path.join(store.dataDir, 'licence.json');
  writeFileSync(file, JSON.stringify({ ...signLicence({ expires_at: '2099-01-01T00:00:00.000Z' }), services: null }));
  const tampered = await oncall(['licence-verify', file], serviceEnv(store));
  t.is(tampered.code, 1);
  t.regex(tampered.stderr, /bad licence: the signature does not match any licence key/);
  writeFileSync(file, JSON.stringify(signLicence({ expires_at: '2099-01-01T00:00:00.000Z' })));
  const unknownKey = await oncall(['licence-verify', file, '--json'], serviceEnv(store, { SERVICE_LICENCE_PUBKEY: undefined }));
  t.is(unknownKey.code, 1);
  t.like(json(unknownKey), { ok: false, status: { state: 'invalid' } });
  t.is((await oncall(['licence-verify', path.join(store.dataDir, 'missing.json')], serviceEnv(store))).code, 2, 'a missing file is a usage error');
});

// GET /v1/doctor

test('GET /v1/doctor answers 401 without a token', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('GET', '/v1/doctor', { token: null });
  t.is(res.status, 401);
  t.deepEqual(res.body, { error: 'unauthorized' });
  t.is((await ta.call('GET', '/v1/doctor', { token: INGEST_TOKEN })).status, 401, 'the ingest token opens nothing here');
});

test('GET /v1/doctor answers 200 with the five checks for the admin token', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('GET', '/v1/doctor');
  t.is(res.status, 200);
  t.true(res.body.ok);
  t.is(res.body.checked_at, ta.clock.now().toISOString());
  t.deepEqual(
    res.body.checks.map((c: { name: string }) => c.name),
    ['database', 'migrations', 'plugins', 'ledger', 'tokens'],
  );
});

test('GET /v1/doctor reuses a report for 60 s unless fresh=1', async (t) => {
  const ta = await startApp(t);
  await appendEvents(ta, 2);
  const ledgerOk = async (q: string) => (await ta.call('GET', `/v1/doctor${q}`)).body.checks.find((c: { name: string }) => c.name === 'ledger').ok as boolean;
  t.true(await ledgerOk(''));
  await tamper(ta, 2);
  ta.clock.advance(60_000);
  t.true(await ledgerOk(''), 'a report 60 s old is reused');
  t.false(await ledgerOk('?fresh=1'), 'fresh=1 runs the checks now');
  await ta.app.db('ledger_events').where({ seq: 2 }).update({ reason: 'step 1' });
  ta.clock.advance(61_000);
  t.true(await ledgerOk(''), 'an older report is not reused');
});

test('GET /v1/doctor refuses a fresh value other than 0 or 1', async (t) => {
  const ta = await startApp(t);
  const res = await ta.call('GET', '/v1/doctor?fresh=yes');
  t.is(res.status, 400);
  t.is(res.body.error, 'invalid_parameter');
});
