// The `mysql` pack against Debian's MariaDB and prometheus-mysqld-exporter, scraped every second by
// Debian's Prometheus: a private mariadbd (its own data folder and loopback port, never the
// machine's on 3306) with a small max_connections and the slow query log at 1 s, the exporter and
// the sql connector signing in with the monitoring account the README documents. Each cause is
// ruled out on the healthy server, then holds on the fault made for it: a transaction holding a
// row lock two others wait on (its session named), statements over long_query_time, connections
// up to the limit, the server killed. Replication: pack-mysql-replication.test.ts, on a real replica.
import { existsSync } from 'node:fs';
import type mysql from 'mysql2/promise';
import { mariadbMissing, startMariadb, startMysqldExporter } from '../helpers/mariadb.ts';
import { testNeeding } from '../helpers/needs.ts';
import { check, rerun, service, untilPrometheus, workload, type SqlConnection } from '../helpers/pack-live.ts';
import { PROMETHEUS_BIN, startPrometheus } from '../helpers/prometheus.ts';
import { waitFor } from '../helpers/wait.ts';

const missing = existsSync(PROMETHEUS_BIN) ? mariadbMissing() : `${PROMETHEUS_BIN} not found (apt-get install prometheus)`;

testNeeding(
  missing,
  'mysql: each cause ruled out on a healthy MariaDB, then holds on the fault made for it (a blocking session named, slow queries, connections at the limit, the server down)',
  async (t) => {
    const db = await startMariadb(t, { maxConnections: 20, longQueryTime: 1 });
    await db.sql('CREATE DATABASE bank');
    await db.sql('CREATE TABLE bank.accounts (id int PRIMARY KEY, balance int) ENGINE=InnoDB');
    await db.sql('INSERT INTO bank.accounts VALUES (1, 100), (2, 100)');
    const x = await startMysqldExporter(t, db);
    const prom = await startPrometheus(t, { jobs: [{ job: 'db', targets: [x] }] });
    const svc = service('db', [workload('job="db"')], { technologies: ['mariadb'] });
    const sql: SqlConnection = { kind: 'mysql', settings: db.settings };
    await untilPrometheus(prom.base, 'mysql_up{job="db"} == 1', (s) => s.length === 1, 60_000);
    await untilPrometheus(prom.base, 'count_over_time(mysql_global_status_slow_queries{job="db"}[1m])', (s) => (s[0]?.value ?? 0) >= 2, 60_000);

    for (const id of ['mysql/down', 'mysql/connections-near-limit', 'mysql/lock-waits', 'mysql/slow-queries', 'mysql/replication']) {
      const v = await check(prom.base, id, svc, { sql });
      t.is(v.verdict, 'ruled_out', `${id}: ${v.reason}`);
    }

    // A batch job's transaction takes a row lock and stays open; two others wait on it.
    const holder = await db.session();
    const [[{ id: holderId }]] = (await holder.query('SELECT CONNECTION_ID() AS id')) as unknown as [[{ id: number }]];
    await holder.query('START TRANSACTION');
    await holder.query('UPDATE bank.accounts SET balance = balance - 1 WHERE id = 1');
    const waiters: mysql.Connection[] = [await db.session(), await db.session()];
    const waiting = waiters.map((w) => w.query('UPDATE bank.accounts SET balance = balance + 1 WHERE id = 1').catch(() => undefined));
    await waitFor(
      'two transactions to wait on the lock',
      async () => Number(((await db.sql('SELECT COUNT(*) AS n FROM information_schema.INNODB_LOCK_WAITS')) as Array<{ n: number }>)[0]!.n) >= 2,
      10_000,
      // InnoDB refreshes what information_schema shows of its locks only when it was not read in
      // the last 100 ms: reading every 50 ms would keep the first, empty, answer for good.
      250,
    );
    const brief = await check(prom.base, 'mysql/lock-waits', svc, { sql });
    t.is(brief.verdict, 'ruled_out', `near miss: waiting for moments, not the default 20 s: ${brief.reason}`);
    t.regex(brief.reason, /wait on a lock, none for 20 s yet/);
    await new Promise((r) => setTimeout(r, 2100));
    const blocked = await check(prom.base, 'mysql/lock-waits', svc, { sql, settings: { wait_s: 1 } });
    t.is(blocked.verdict, 'holds', blocked.reason);
    t.regex(
      blocked.reason,
      new RegExp(
        `^session thread ${holderId} \\(user root from 127\\.0\\.0\\.1:\\d+\\) holds row locks 2 transactions have waited on for up to \\d+ s; its transaction has been open \\d+ s \\(Sleep, no statement running\\)`,
      ),
    );
    t.deepEqual(blocked.subjects, [`thread ${holderId}`]);
    t.regex(blocked.evidence[0]!.query, /INNODB_LOCK_WAITS/);
    await holder.query('ROLLBACK');
    await Promise.all(waiting);

    // Statements over long_query_time (1 s): the slow query log counts them.
    for (let i = 0; i < 3; i++) await db.sql('SELECT SLEEP(1.2)');
    await untilPrometheus(prom.base, `increase(mysql_global_status_slow_queries{instance="${x}"}[10m])`, (s) => (s[0]?.value ?? 0) >= 3, 60_000);
    const near = await check(prom.base, 'mysql/slow-queries', svc);
    t.is(near.verdict, 'ruled_out', `near miss: 3 slow queries, under the default 10: ${near.reason}`);
    const slow = await check(prom.base, 'mysql/slow-queries', svc, { settings: { min: 3 } });
    t.is(slow.verdict, 'holds', slow.reason);
    t.regex(slow.reason, /slow queries in the last 10m on/);
    for (const e of slow.evidence) t.true((await rerun(prom.base, e.query, e.at)).length > 0, `${e.query} re-runs`);

    // Connections up to max_connections (20): 90 % is 18.
    const connected = Number(((await db.sql("SHOW GLOBAL STATUS LIKE 'Threads_connected'")) as Array<{ Value: string }>)[0]!.Value);
    for (let i = connected; i < 19; i++) await db.session();
    await untilPrometheus(prom.base, `mysql_global_status_threads_connected{instance="${x}"}`, (s) => (s[0]?.value ?? 0) >= 18, 60_000);
    const full = await check(prom.base, 'mysql/connections-near-limit', svc);
    t.is(full.verdict, 'holds', full.reason);

    // The server killed as a crash kills it: the exporter answers mysql_up 0.
    process.kill(db.pid!, 'SIGKILL');
    await untilPrometheus(prom.base, `mysql_up{instance="${x}"}`, (s) => s[0]?.value === 0, 60_000);
    const gone = await check(prom.base, 'mysql/down', svc);
    t.is(gone.verdict, 'holds', gone.reason);
    t.regex(gone.reason, /1 of 1 MySQL of .* cannot be reached by its exporter \(mysql_up = 0\)/);
  },
);
