// The `sql` read capability's connectors (issue 26) against the real servers: `postgres` on a
// private PostgreSQL cluster of the test's own, `mysql` on MariaDB (a database and accounts of the
// test's own on the machine's server). Each runs only a statement a pack declared, read-only (a
// write is refused by the server), with a statement timeout and a row cap; its `test` says which
// of the packs' statements the monitoring account may run; a password never shows.
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import type { ConnectorContext, ConnectorPluginWithCapabilities, ConnectorReadRequest } from '../../host/plugins/contract.ts';
import { pluginHttp } from '../../host/plugins/http-client.ts';
import { pluginLibrary } from '../../host/plugins/lib/index.ts';
import mysqlPlugin from '../../plugins/connectors/mysql/index.ts';
import postgresPlugin from '../../plugins/connectors/postgres/index.ts';
import { STATEMENTS as PG_STATEMENTS } from '../../packs/postgres/statements.ts';
import { makeOperating, startApp } from '../helpers/app.ts';
import { testNeeding } from '../helpers/needs.ts';
import { MONITOR, postgresMissing, startPostgres } from '../helpers/postgres.ts';

const log = { info: () => undefined, warn: () => undefined, error: () => undefined };
const ctxOf = (settings: Record<string, unknown>, named?: ConnectorContext['named']): ConnectorContext => {
  const signal = AbortSignal.timeout(15_000);
  return {
    log,
    settings,
    signal,
    timeoutMs: 15_000,
    http: pluginHttp({ settings, signal, secrets: [] }),
    lib: pluginLibrary,
    ...(named === undefined ? {} : { named }),
  };
};
const declared = (dialect: string, text: string, name = 'x'): ConnectorReadRequest => ({
  capability: 'sql',
  request: { name },
  declared: { pack: 'vendor', name, value: { dialect, text } },
});

const MARIADB = { host: '127.0.0.1', port: 3306, user: 'root' };
const mariadbMissing = await mysql
  .createConnection({ ...MARIADB, connectTimeout: 2000 })
  .then(async (c) => (await c.end(), null))
  .catch((e: Error) => `MariaDB not reachable at 127.0.0.1:3306 as root (${e.message})`);

testNeeding(
  postgresMissing(),
  'postgres connector: a declared statement runs read-only with a row cap and a statement timeout; its test says which statements the account may run; the host hands it the packs',
  async (t) => {
    const db = await startPostgres(t);
    await db.sql('CREATE TABLE accounts (id int PRIMARY KEY)');
    await db.sql('CREATE SEQUENCE ids');
    await db.sql(`GRANT USAGE ON SEQUENCE ids TO ${MONITOR.user}`);
    const plugin = postgresPlugin as ConnectorPluginWithCapabilities;
    const pgNamed = (extra: Record<string, Record<string, unknown>> = {}) => ({
      sql: { ...Object.fromEntries(Object.entries(PG_STATEMENTS).map(([k, v]) => [`postgres/${k}`, v])), ...extra },
    });

    const tested = await plugin.test(
      ctxOf(
        db.settings,
        pgNamed({
          'vendor/balances': { dialect: 'postgres', text: 'SELECT id FROM accounts' },
          'vendor/next-id': { dialect: 'postgres', text: "SELECT nextval('ids')" },
          'vendor/other': { dialect: 'mysql', text: 'SELECT 1' },
        }),
      ),
    );
    t.true(tested.ok, String(tested.problem));
    const found = (tested as unknown as { found: { version: string; replica: boolean; statements: Record<string, string> } }).found;
    t.regex(found.version, /^15\./);
    t.is(found.replica, false);
    t.is(found.statements['postgres/blocking-sessions'], 'may run');
    t.is(found.statements['postgres/long-transactions'], 'may run');
    t.is(found.statements['postgres/replication'], 'may run');
    t.regex(
      found.statements['vendor/balances']!,
      /^permission denied: permission denied for table accounts/,
      'the monitoring account reads no application table',
    );
    t.regex(found.statements['vendor/next-id']!, /^refused in a read-only transaction: cannot execute nextval\(\) in a read-only transaction/);
    t.false('vendor/other' in found.statements, 'another dialect is not tried');

    const capped = await plugin.read!(ctxOf({ ...db.settings, max_rows: 3 }), declared('postgres', 'SELECT n FROM generate_series(1, 10) AS n;'));
    t.like(capped, { ok: true, answer: { columns: ['n'], rows: [[1], [2], [3]], truncated: true } });
    const slow = await plugin.read!(ctxOf({ ...db.settings, timeout_s: 0.5 }), declared('postgres', 'SELECT pg_sleep(3)'));
    t.like(slow, { ok: false, problem: 'the statement ran past its 0.5 s timeout and was cancelled' });
    const writes = await plugin.read!(ctxOf(db.settings), declared('postgres', 'DELETE FROM accounts RETURNING id'));
    t.false(writes.ok, 'a statement that is not a query cannot even be wrapped');
    t.is(
      Number((await db.sql('SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1', ['oncall-engineer']))[0]!.n),
      0,
      'every connection is closed',
    );
    const wrong = await plugin.test(ctxOf({ ...db.settings, password: 'not-the-password-9f3c' }));
    t.is(wrong.ok, false);
    t.regex(String(wrong.problem), /^authentication failed for user oncall_monitor/);
    t.false(String(wrong.problem).includes('not-the-password-9f3c'));
    t.like(await plugin.test(ctxOf({ ...db.settings, port: 1 })), { ok: false, problem: 'cannot connect to 127.0.0.1:1: connection refused' });

    // Through the host: the connector's test is handed the loaded packs' statements.
    const ta = await startApp(t);
    await makeOperating(ta);
    const r = await ta.call('POST', '/v1/connectors/test', { body: { kind: 'postgres', settings: db.settings } });
    t.is(r.status, 200, JSON.stringify(r.body));
    t.true(r.body.ok, String(r.body.problem));
    t.deepEqual(r.body.found.statements, {
      'postgres/blocking-sessions': 'may run',
      'postgres/long-transactions': 'may run',
      'postgres/replication': 'may run',
    });
    t.false(JSON.stringify(r.body).includes(MONITOR.password));
  },
);

testNeeding(
  mariadbMissing,
  'mysql connector on MariaDB: a declared statement runs read-only with a row cap and a statement timeout; its test says which statements the account may run',
  async (t) => {
    const suffix = randomBytes(4).toString('hex');
    const database = `oncall_sql_${suffix}`;
    const user = `oncall_mon_${suffix}`;
    const password = `pw-${randomBytes(8).toString('hex')}`;
    const root = await mysql.createConnection(MARIADB);
    t.teardown(async () => {
      await root.query(`DROP DATABASE IF EXISTS ${database}`);
      await root.query(`DROP USER IF EXISTS '${user}'@'127.0.0.1'`);
      await root.end();
    });
    await root.query(`CREATE DATABASE ${database}`);
    await root.query(`CREATE TABLE ${database}.accounts (id int PRIMARY KEY) ENGINE=InnoDB`);
    await root.query(`CREATE USER '${user}'@'127.0.0.1' IDENTIFIED BY '${password}'`);
    // The grants packs/mysql/README.md documents.
    await root.query(`GRANT PROCESS, REPLICATION CLIENT ON *.* TO '${user}'@'127.0.0.1'`);
    const settings = { host: '127.0.0.1', port: 3306, user, password, timeout_s: 5 };
    const plugin = mysqlPlugin as ConnectorPluginWithCapabilities;

    const tested = await plugin.test(
      ctxOf(settings, {
        sql: {
          'vendor/processes': { dialect: 'mysql', text: 'SELECT id, user FROM information_schema.PROCESSLIST' },
          'vendor/balances': { dialect: 'mysql', text: `SELECT id FROM ${database}.accounts` },
          'vendor/other': { dialect: 'postgres', text: 'SELECT 1' },
        },
      }),
    );
    t.true(tested.ok, String(tested.problem));
    const found = (tested as unknown as { found: { version: string; statements: Record<string, string> } }).found;
    t.regex(found.version, /MariaDB/);
    t.is(found.statements['vendor/processes'], 'may run');
    t.regex(found.statements['vendor/balances']!, /^permission denied: SELECT command denied/);
    t.false('vendor/other' in found.statements);

    const capped = await plugin.read!(
      ctxOf({ ...settings, max_rows: 2 }),
      declared('mysql', 'WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 10) SELECT n FROM s;'),
    );
    t.like(capped, { ok: true, answer: { columns: ['n'], rows: [[1], [2]], truncated: true } }, JSON.stringify(capped));
    const slow = await plugin.read!(ctxOf({ ...settings, timeout_s: 0.5 }), declared('mysql', 'SELECT SLEEP(3) AS s'));
    t.like(slow, { ok: false, problem: 'the statement ran past its 0.5 s timeout and was stopped' });
    const wrong = await plugin.test(ctxOf({ ...settings, password: 'not-the-password-9f3c' }));
    t.like(wrong, { ok: false, problem: `authentication failed for user ${user}` });
  },
);
