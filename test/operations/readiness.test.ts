// GET /health/ready (issue 24): 503 with the reason while storage cannot be written, the schema
// is not this version's, or the shutdown has begun; GET /health stays the liveness answer.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import { ENGINE, MARIADB_URL, withServer } from '../helpers/db.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { testNeeding } from '../helpers/needs.ts';
import { tcpProxy } from '../helpers/tcp-proxy.ts';
import { fillDisk, hostOnTmpfs, tmpfsMissing } from '../helpers/tmpfs.ts';
import { waitFor } from '../helpers/wait.ts';
import { listeningPort } from '../helpers/listening.ts';

// Asked before any test is declared: ava takes declarations only until the file's first pause.
const mariadbMissing = await withServer(MARIADB_URL, (db) => db.raw('select 1')).then(
  () => null,
  (e: Error) => `MariaDB at ${new URL(MARIADB_URL).host} not reachable: ${e.message}`,
);
const METRICS_TOKEN = 'metrics-token-for-tests-0123456789abcdef';
const ready = (ta: TestApp) => ta.call('GET', '/health/ready', { token: null });

test('a healthy install is ready: 200 with no token, and the write probes leave nothing behind', async (t) => {
  const ta = await startApp(t, { manualTick: true });
  const answers = await Promise.all(Array.from({ length: 20 }, () => ready(ta)));
  t.deepEqual(
    answers.map((a) => [a.status, a.body]),
    answers.map(() => [200, { status: 'ready' }]),
  );
  t.deepEqual(
    readdirSync(ta.store.dataDir).filter((f) => f.startsWith('.ready-')),
    [],
  );
});

test('once the shutdown has begun readiness answers 503 shutting_down, while /health (liveness) still answers 200', async (t) => {
  const ta = await startApp(t, { manualTick: true });
  t.is((await ready(ta)).status, 200);
  ta.app.readiness.markShuttingDown();
  t.true(ta.app.readiness.shuttingDown);
  t.deepEqual((await ready(ta)).body, { error: 'not_ready', reasons: ['shutting_down'] });
  t.is((await ready(ta)).status, 503);
  t.deepEqual((await ta.call('GET', '/health', { token: null })).body, { status: 'ok' });
});

test('a database migrated by a newer version makes readiness answer 503 schema_newer', async (t) => {
  const ta = await startApp(t, { manualTick: true });
  await ta.app.db('knex_migrations').insert({ name: '209912312359_add_future_thing.ts', batch: 99, migration_time: new Date() });
  const r = await ready(ta);
  t.is(r.status, 503);
  t.deepEqual(r.body.reasons, ['schema_newer']);
});

test('a migration this version has that the database lacks makes readiness answer 503 migrations_pending', async (t) => {
  const ta = await startApp(t, { manualTick: true });
  const last = (await ta.app.db('knex_migrations').max({ id: 'id' }).first()) as { id: number };
  await ta.app.db('knex_migrations').where({ id: last.id }).delete();
  const r = await ready(ta);
  t.is(r.status, 503);
  t.deepEqual(r.body.reasons, ['migrations_pending']);
});

test('a database that refuses writes makes readiness answer 503 storage_unwritable, and 200 again once it takes them', async (t) => {
  const ta = await startApp(t, { manualTick: true });
  const triggers =
    ENGINE === 'mysql'
      ? [
          "create trigger refuse_probe_i before insert on storage_probe for each row signal sqlstate '45000' set message_text = 'read only'",
          "create trigger refuse_probe_u before update on storage_probe for each row signal sqlstate '45000' set message_text = 'read only'",
        ]
      : [
          "create trigger refuse_probe_i before insert on storage_probe begin select raise(abort, 'read only'); end",
          "create trigger refuse_probe_u before update on storage_probe begin select raise(abort, 'read only'); end",
        ];
  for (const sql of triggers) await ta.app.db.raw(sql);
  const r = await ready(ta);
  t.is(r.status, 503);
  t.deepEqual(r.body, { error: 'not_ready', reasons: ['storage_unwritable'] }, 'codes only: the database error goes to the log');
  t.true(ta.logs.some((l) => l.includes('"msg":"not ready"') && l.includes('read only')));
  await ta.app.db.raw('drop trigger refuse_probe_i');
  await ta.app.db.raw('drop trigger refuse_probe_u');
  await waitFor('ready again', async () => (await ready(ta)).status === 200, 5000, 200);
  t.true(ta.logs.some((l) => l.includes('"msg":"ready again"')));
});

testNeeding(
  tmpfsMissing,
  'a full disk under the data directory makes readiness answer 503 disk_full (and oncall_ready 0), and 200 once space is freed',
  async (t) => {
    const host = hostOnTmpfs(t, { sizeMb: 64, env: { SERVICE_METRICS_TOKEN: METRICS_TOKEN, SERVICE_ADMIN_TOKEN: 'admin-token-for-tests-0123456789abcdef' } });
    const base = await waitFor('the host to listen', async () => {
      const port = listeningPort(host.output());
      if (port === null && host.child.exitCode !== null) throw new Error(host.output());
      return port === null ? null : `http://127.0.0.1:${port}`;
    });
    const probe = async () => {
      const res = await fetch(`${base}/health/ready`);
      return { status: res.status, body: (await res.json()) as { reasons?: string[] } };
    };
    t.is((await probe()).status, 200);
    fillDisk(path.join(host.outside, 'fill'));
    const full = await waitFor('not ready', async () => {
      const r = await probe();
      return r.status === 503 ? r : null;
    });
    t.deepEqual(full.body.reasons, ['disk_full']);
    const metrics = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    t.regex(metrics, /^oncall_ready 0$/m);
    t.regex(metrics, /^oncall_not_ready\{reason="disk_full"\} 1$/m);
    rmSync(path.join(host.outside, 'fill'));
    await waitFor('ready again', async () => (await probe()).status === 200);
    t.pass();
  },
);

testNeeding(mariadbMissing, 'MySQL: the database going away makes readiness answer 503 within the probe timeout, and 200 once it is back', async (t) => {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withServer(MARIADB_URL, (db) => db.raw(`create database \`${name}\` character set utf8mb4 collate utf8mb4_bin`));
  const server = new URL(MARIADB_URL);
  const proxy = await tcpProxy(t, { host: server.hostname, port: Number(server.port || 3306) });
  const url = new URL(MARIADB_URL);
  url.host = `127.0.0.1:${proxy.port}`;
  url.pathname = `/${name}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'oncall-ready-'));
  const store = {
    dataDir,
    databaseUrl: url.toString(),
    cleanup: async () => {
      await withServer(MARIADB_URL, (db) => db.raw(`drop database if exists \`${name}\``));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  t.teardown(() => store.cleanup());
  const ta = await startApp(t, { manualTick: true, store, env: { SERVICE_METRICS_TOKEN: METRICS_TOKEN } });
  t.is((await ready(ta)).status, 200);
  await proxy.cut();
  const down = await waitFor('not ready', async () => {
    const r = await ready(ta);
    return r.status === 503 ? r : null;
  });
  t.true(['storage_unwritable', 'storage_timeout'].includes(down.body.reasons[0]), JSON.stringify(down.body));
  await proxy.restore();
  await waitFor('ready again', async () => (await ready(ta)).status === 200, 30_000, 250);
  t.pass();
});
