// `mysql/replication` against real MariaDB replication: two private mariadbd of the test's own
// (a primary writing its binary log, a replica of it), each with Debian's
// prometheus-mysqld-exporter signing in with the monitoring account the README documents,
// scraped every second by Debian's Prometheus. The cause is ruled out while the replica
// replicates, stays silent on a lag under its threshold (near miss), holds on a replica held
// behind (a delayed replica: MASTER_DELAY), on one whose SQL thread was stopped and once its
// primary is killed (the IO thread left connecting); unknown when the account lacks the grant
// that shows the replica status (SLAVE MONITOR, MariaDB 10.5.9 and later).
import { existsSync } from 'node:fs';
import { mariadbMissing, MYSQL_MONITOR, startMariadb, startMysqldExporter } from '../helpers/mariadb.ts';
import { testNeeding } from '../helpers/needs.ts';
import { check, rerun, service, untilPrometheus, workload } from '../helpers/pack-live.ts';
import { PROMETHEUS_BIN, startPrometheus } from '../helpers/prometheus.ts';

const missing = existsSync(PROMETHEUS_BIN) ? mariadbMissing() : `${PROMETHEUS_BIN} not found (apt-get install prometheus)`;

const REPL = { user: 'oncall_repl', password: 'repl-test-password-41f0' };

testNeeding(
  missing,
  'mysql/replication on a real MariaDB replica: ruled out while it replicates, a lag under max_lag_s a near miss, holds when held behind, its SQL thread stopped or its primary killed; unknown without the grant',
  async (t) => {
    const primary = await startMariadb(t, { serverId: 1, binlog: true });
    const replica = await startMariadb(t, { serverId: 2 });
    await primary.sql(`CREATE USER '${REPL.user}'@'127.0.0.1' IDENTIFIED BY '${REPL.password}'`);
    await primary.sql(`GRANT REPLICATION SLAVE ON *.* TO '${REPL.user}'@'127.0.0.1'`);
    const [{ File: file, Position: position }] = (await primary.sql('SHOW MASTER STATUS')) as [{ File: string; Position: number }];
    await replica.sql(
      `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${primary.port}, MASTER_USER='${REPL.user}', MASTER_PASSWORD='${REPL.password}', MASTER_LOG_FILE='${file}', MASTER_LOG_POS=${position}, MASTER_CONNECT_RETRY=1`,
    );
    await replica.sql('START SLAVE');
    await primary.sql('CREATE DATABASE bank');
    await primary.sql('CREATE TABLE bank.accounts (id int PRIMARY KEY, balance int) ENGINE=InnoDB');
    await primary.sql('INSERT INTO bank.accounts VALUES (1, 100)');

    const targets = [await startMysqldExporter(t, primary), await startMysqldExporter(t, replica)];
    const prom = await startPrometheus(t, { jobs: [{ job: 'db', targets }] });
    const svc = service('db', [workload('job="db"')], { technologies: ['mariadb'] });
    const onReplica = `instance="${targets[1]}"`;
    await untilPrometheus(
      prom.base,
      `mysql_slave_status_slave_sql_running{${onReplica}} == 1 and mysql_slave_status_slave_io_running{${onReplica}} == 1`,
      (s) => s.length === 1,
      60_000,
    );

    const healthy = await check(prom.base, 'mysql/replication', svc);
    t.is(healthy.verdict, 'ruled_out', healthy.reason);
    t.regex(healthy.reason, /^every replica of .* replicates, less than 300 s behind$/);
    t.like(healthy.evidence[0]!.observed, { replicas: [{ instance: targets[1], io_running: 1, sql_running: 1 }] });

    // The replica held 30 s behind its primary (a delayed replica), and a write on the primary.
    await replica.sql('STOP SLAVE');
    await replica.sql('CHANGE MASTER TO MASTER_DELAY=30');
    await replica.sql('START SLAVE');
    await primary.sql('UPDATE bank.accounts SET balance = balance - 1 WHERE id = 1');
    await untilPrometheus(prom.base, `mysql_slave_status_seconds_behind_master{${onReplica}}`, (s) => (s[0]?.value ?? 0) >= 5, 60_000);
    const near = await check(prom.base, 'mysql/replication', svc);
    t.is(near.verdict, 'ruled_out', `near miss: seconds behind, under the default 300: ${near.reason}`);
    const behind = await check(prom.base, 'mysql/replication', svc, { settings: { max_lag_s: 5 } });
    t.is(behind.verdict, 'holds', behind.reason);
    t.regex(behind.reason, new RegExp(`^${targets[1]!.replaceAll('.', '\\.')} \\d+ s behind the primary \\(at least 5 s\\)$`));
    t.deepEqual(behind.subjects, [targets[1]]);
    for (const e of behind.evidence) t.true((await rerun(prom.base, e.query, e.at)).length > 0, `${e.query} re-runs`);

    // Its SQL thread stopped (as a replication error stops it): replication stopped.
    await replica.sql('STOP SLAVE SQL_THREAD');
    await untilPrometheus(prom.base, `mysql_slave_status_slave_sql_running{${onReplica}}`, (s) => s[0]?.value === 0, 60_000);
    const stopped = await check(prom.base, 'mysql/replication', svc);
    t.is(stopped.verdict, 'holds', stopped.reason);
    t.regex(stopped.reason, new RegExp(`^replication stopped on ${targets[1]!.replaceAll('.', '\\.')} \\(SQL thread stopped\\)`));
    const sqlThread = stopped.evidence.find((e) => e.query.includes('slave_sql_running'))!;
    const again = await rerun(prom.base, sqlThread.query, sqlThread.at);
    t.true(
      again.some((x) => x.value === 0),
      'the evidence query, re-run at its moment, shows the stopped thread',
    );

    // The primary killed as a crash kills it: the replica's IO thread can only keep connecting.
    process.kill(primary.pid!, 'SIGKILL');
    await untilPrometheus(prom.base, `mysql_slave_status_slave_io_running{${onReplica}}`, (x) => x[0]?.value === 0, 60_000);
    const orphan = await check(prom.base, 'mysql/replication', svc);
    t.is(orphan.verdict, 'holds', orphan.reason);
    t.regex(orphan.reason, /\(IO thread stopped, SQL thread stopped\)/);

    // Without SLAVE MONITOR the exporter cannot read the replica status at all: its series go,
    // and a replica with no series is no proof of a primary. Unknown, naming the grant.
    await replica.sql(`REVOKE SLAVE MONITOR ON *.* FROM '${MYSQL_MONITOR.user}'@'127.0.0.1'`);
    await untilPrometheus(prom.base, `mysql_slave_status_slave_io_running{${onReplica}}`, (x) => x.length === 0, 60_000);
    await untilPrometheus(
      prom.base,
      `increase(mysql_exporter_scrape_errors_total{collector="collect.slave_status",${onReplica}}[2m])`,
      (x) => (x[0]?.value ?? 0) > 0,
      60_000,
    );
    const blind = await check(prom.base, 'mysql/replication', svc);
    t.is(blind.verdict, 'unknown', blind.reason);
    t.regex(blind.reason, /cannot read the replica status .*: grant the monitoring account SLAVE MONITOR/);
  },
);
