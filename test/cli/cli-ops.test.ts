import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import test from 'ava';
import { makeOperating, serviceEnv, startApp } from '../helpers/app.ts';
import { createTestStore, type TestStore } from '../helpers/db.ts';
import { closedAddress } from '../helpers/licence-server.ts';
import { json, oncall } from '../helpers/cli.ts';

const byName = (report: { checks: Array<{ name: string }> }): Record<string, any> => Object.fromEntries(report.checks.map((c) => [c.name, c]));

async function emptyStore(t: { teardown(fn: () => Promise<void>): void }): Promise<TestStore> {
  const store = await createTestStore();
  t.teardown(() => store.cleanup());
  return store;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// preflight

test('preflight on a new install passes every check and creates nothing', async (t) => {
  const store = await emptyStore(t);
  const env = serviceEnv(store, { SERVICE_PORT: String(await freePort()), SERVICE_HOST: '127.0.0.1' });
  const res = await oncall(['preflight', '--json'], env);
  t.is(res.code, 0, res.stdout + res.stderr);
  const report = json(res);
  t.like(report, { ok: true, deep: false });
  t.deepEqual(
    report.checks.map((c: { name: string }) => c.name),
    ['config', 'data_dir', 'database', 'migrations', 'port', 'plugins'],
  );
  for (const c of report.checks) t.true(c.ok, `${c.name}: ${c.detail}`);
  t.false(existsSync(path.join(store.dataDir, 'service.db')), 'no database is created');
  t.false(existsSync(path.join(store.dataDir, 'secret.key')), 'no key is created');
  const human = await oncall(['preflight'], env);
  t.is(human.code, 0);
  t.regex(human.stdout, /ready to start: all 6 checks passed/);
});

test('preflight fails when the port is taken (the service already runs there), and reports a started install as current', async (t) => {
  const ta = await startApp(t);
  const port = Number(new URL(ta.base).port);
  const res = await oncall(['preflight', '--json'], { ...ta.env, SERVICE_PORT: String(port), SERVICE_HOST: '127.0.0.1' });
  t.is(res.code, 1);
  const checks = byName(json(res));
  t.like(checks.port, { ok: false, level: 'fail' });
  t.regex(checks.port.detail, new RegExp(`port ${port} on 127.0.0.1 is in use`));
  t.like(checks.database, { ok: true });
  t.like(checks.migrations, { ok: true, detail: 'schema is current' });
});

test('preflight: an invalid configuration exits 2 naming the variable; an unreachable database fails', async (t) => {
  const bad = await oncall(['preflight', '--json'], { SERVICE_PORT: 'eighty' });
  t.is(bad.code, 2);
  const report = json(bad);
  t.false(report.ok);
  t.like(report.checks[0], { name: 'config', ok: false });
  t.regex(report.checks[0].detail, /SERVICE_PORT must be a whole number/);
  const store = await emptyStore(t);
  const dbPort = await freePort();
  const res = await oncall(
    ['preflight', '--json'],
    serviceEnv(store, {
      SERVICE_PORT: String(await freePort()),
      SERVICE_HOST: '127.0.0.1',
      SERVICE_DATABASE_URL: `mysql://oncall:hunter2-password@127.0.0.1:${dbPort}/oncall`,
    }),
  );
  t.is(res.code, 1);
  const checks = byName(json(res));
  t.like(checks.database, { ok: false });
  t.regex(checks.database.detail, new RegExp(`cannot reach the database \\(MySQL 127.0.0.1:${dbPort}/oncall\\)`));
  t.like(checks.migrations, { ok: false, detail: 'not checked: the database is unreachable' });
  t.false(res.stdout.includes('hunter2'));
});

test('preflight warns about pending migrations (applied at the next start)', async (t) => {
  const ta = await startApp(t);
  const last = (await ta.app.db('knex_migrations').orderBy('id', 'desc').first()) as { name: string };
  await ta.app.db('knex_migrations').where({ name: last.name }).del();
  const res = await oncall(['preflight', '--json'], { ...ta.env, SERVICE_PORT: String(await freePort()), SERVICE_HOST: '127.0.0.1' });
  t.is(res.code, 0, res.stdout);
  t.like(byName(json(res)).migrations, { ok: true, level: 'warn', detail: '1 migration pending: applied at the next start' });
});

test('preflight --deep checks every connector and the mail state', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  t.is((await ta.call('PUT', '/v1/connectors/web', { body: { kind: 'http', settings: { base_url: await closedAddress() } } })).status, 201);
  const res = await oncall(['preflight', '--deep', '--json'], { ...ta.env, SERVICE_PORT: String(await freePort()), SERVICE_HOST: '127.0.0.1' });
  t.is(res.code, 1, res.stdout + res.stderr);
  const report = json(res);
  t.true(report.deep);
  const checks = byName(report);
  t.like(checks.connectors, { ok: false, level: 'fail' });
  t.regex(checks.connectors.detail, /1 connector checked, 1 with a problem: web \(http\): /);
  t.like(checks.mail, { ok: true, level: 'warn' });
  // The check is recorded as the connector's last check, which the service then shows.
  const listed = (await ta.call('GET', '/v1/connectors')).body.connectors;
  t.like(listed[0], { name: 'web', state: 'problem' });
});

test('preflight --deep on an install that never started does not check connectors', async (t) => {
  const store = await emptyStore(t);
  const res = await oncall(['preflight', '--deep', '--json'], serviceEnv(store, { SERVICE_PORT: String(await freePort()), SERVICE_HOST: '127.0.0.1' }));
  t.is(res.code, 0, res.stdout);
  const checks = byName(json(res));
  t.like(checks.connectors, { level: 'warn' });
  t.regex(checks.connectors.detail, /not checked: the install has not started yet/);
});

// connectors list / check

test('connectors list shows each connector, its state and last problem; exits 1 when one has a problem', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  const empty = await oncall(['connectors', 'list'], ta.env);
  t.is(empty.code, 0, empty.stderr);
  t.regex(empty.stdout, /no connectors configured/);
  t.is(
    (
      await ta.call('PUT', '/v1/connectors/web', {
        body: { kind: 'http', settings: { base_url: await closedAddress(), bearer_token: 'secret-token-never-printed' } },
      })
    ).status,
    201,
  );
  const unchecked = await oncall(['connectors', 'list', '--json'], ta.env);
  t.is(unchecked.code, 0, unchecked.stderr);
  t.like(json(unchecked), { ok: true, connectors: [{ name: 'web', kind: 'http', source: 'console', state: 'unchecked', last_problem: null }] });
  await ta.call('POST', '/v1/connectors/web/check');
  const human = await oncall(['connectors', 'list'], ta.env);
  t.is(human.code, 1);
  t.regex(human.stdout, /web\s+http\s+console\s+problem/);
  t.false(human.stdout.includes('secret-token-never-printed'));
});

test('connectors check runs the check now, records it, and exits 1 on a problem or an unknown name', async (t) => {
  const ta = await startApp(t);
  await makeOperating(ta);
  t.is((await ta.call('PUT', '/v1/connectors/web', { body: { kind: 'http', settings: { base_url: await closedAddress() } } })).status, 201);
  const res = await oncall(['connectors', 'check', 'web', '--json'], ta.env);
  t.is(res.code, 1, res.stderr);
  const out = json(res);
  t.like(out, { ok: false, connector: { name: 'web', state: 'problem' }, check: { ok: false } });
  t.truthy(out.check.problem);
  t.like((await ta.call('GET', '/v1/connectors/web')).body, { state: 'problem' });
  const human = await oncall(['connectors', 'check', 'web'], ta.env);
  t.regex(human.stdout, /^PROBLEM: web \(http\): /);
  const unknown = await oncall(['connectors', 'check', 'nope', '--json'], ta.env);
  t.is(unknown.code, 1);
  t.like(json(unknown), { ok: false, error: 'not_found' });
});

test('connectors list on an install that never started says so', async (t) => {
  const store = await emptyStore(t);
  const res = await oncall(['connectors', 'list'], serviceEnv(store));
  t.is(res.code, 1);
  t.regex(res.stderr, /this install has not started yet/);
});
