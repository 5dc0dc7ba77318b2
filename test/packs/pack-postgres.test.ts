// The `postgres` pack against Debian's PostgreSQL 15 and prometheus-postgres-exporter, scraped
// every second by Debian's Prometheus: a private cluster (initdb in a temporary folder, its own
// loopback port) with a small max_connections and a streaming replica of it, the exporter and the
// sql connector signing in with the monitoring account the README documents. Each cause is ruled
// out on the healthy pair, then holds on the fault made for it: a session holding a row lock two
// others wait on, its transaction left open, connections up to the limit, a real deadlock, the
// primary killed (its replica's receiver stops, its exporter answers pg_up 0).
import { existsSync } from 'node:fs';
import type pg from 'pg';
import { testNeeding } from '../helpers/needs.ts';
import { check, rerun, service, untilPrometheus, workload, type SqlConnection } from '../helpers/pack-live.ts';
import { postgresMissing, startPostgres, startPostgresExporter } from '../helpers/postgres.ts';
import { PROMETHEUS_BIN, startPrometheus } from '../helpers/prometheus.ts';
import { waitFor } from '../helpers/wait.ts';

const missing = existsSync(PROMETHEUS_BIN) ? postgresMissing() : `${PROMETHEUS_BIN} not found (apt-get install prometheus)`;

testNeeding(
  missing,
  'postgres: each cause ruled out on a healthy primary and replica, then holds on the fault made for it (a blocking session named, a long transaction, connections at the limit, a deadlock, replication cut, the primary down)',
  async (t) => {
    const primary = await startPostgres(t, { maxConnections: 20 });
    await primary.sql('CREATE TABLE accounts (id int PRIMARY KEY, balance int)');
    await primary.sql('INSERT INTO accounts VALUES (1, 100), (2, 100)');
    const replica = await startPostgres(t, { replicaOf: primary });
    const [px, rx] = await Promise.all([startPostgresExporter(t, primary), startPostgresExporter(t, replica)]);
    // Scraped every 5 s, as postgres_exporter answers in 1 to 2 s once its server is down (a 1 s
    // scrape would time out and leave no pg_up at all, where a real 15 s scrape records pg_up 0).
    const prom = await startPrometheus(t, { jobs: [{ job: 'db', targets: [px, rx], intervalS: 5 }] });
    const db = service('db', [workload('job="db"')], { technologies: ['postgres'] });
    const onPrimary: SqlConnection = { kind: 'postgres', settings: primary.settings };
    const onReplica: SqlConnection = { kind: 'postgres', settings: replica.settings };
    await untilPrometheus(prom.base, 'pg_up{job="db"} == 1', (s) => s.length === 2, 60_000);
    await untilPrometheus(
      prom.base,
      'count_over_time(pg_stat_database_deadlocks{job="db",datname="postgres"}[1m])',
      (s) => s.length === 2 && s.every((x) => x.value >= 2),
      60_000,
    );
    await waitFor('the replica to stream', async () => (await replica.sql('SELECT status FROM pg_stat_wal_receiver'))[0]?.status === 'streaming', 20_000, 100);

    for (const id of ['postgres/down', 'postgres/connections-near-limit', 'postgres/deadlocks']) {
      const v = await check(prom.base, id, db, { sql: onPrimary });
      t.is(v.verdict, 'ruled_out', `${id}: ${v.reason}`);
    }
    for (const [id, sql] of [
      ['postgres/blocking-session', onPrimary],
      ['postgres/long-transaction', onPrimary],
      ['postgres/replication', onPrimary],
      ['postgres/replication', onReplica],
    ] as const) {
      const v = await check(prom.base, id, db, { sql });
      t.is(v.verdict, 'ruled_out', `${id} on ${sql === onPrimary ? 'the primary' : 'the replica'}: ${v.reason}`);
    }
    t.regex((await check(prom.base, 'postgres/replication', db, { sql: onPrimary })).reason, /every standby streams less than 60 s behind/);
    t.regex((await check(prom.base, 'postgres/replication', db, { sql: onReplica })).reason, /this server is a replica streaming from 127\.0\.0\.1/);

    // A batch job's session takes a row lock and keeps its transaction open; two others wait on it.
    const holder = await primary.session();
    await holder.query("SET application_name = 'billing-batch'");
    const holderPid = Number((await holder.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
    await holder.query('BEGIN');
    await holder.query('UPDATE accounts SET balance = balance - 1 WHERE id = 1');
    const waiters: pg.Client[] = [await primary.session(), await primary.session()];
    const waiting = waiters.map((w) => w.query('UPDATE accounts SET balance = balance + 1 WHERE id = 1').catch(() => undefined));
    await waitFor(
      'two sessions to wait on the lock',
      async () => Number((await primary.sql("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'"))[0]!.n) === 2,
      10_000,
      50,
    );
    const brief = await check(prom.base, 'postgres/blocking-session', db, { sql: onPrimary });
    t.is(brief.verdict, 'ruled_out', `near miss: waiting for moments, not the default 20 s: ${brief.reason}`);
    t.regex(brief.reason, /2 sessions wait on a lock, none for 20 s yet/);
    await new Promise((r) => setTimeout(r, 1100));
    const blocked = await check(prom.base, 'postgres/blocking-session', db, { sql: onPrimary, settings: { wait_s: 1 } });
    t.is(blocked.verdict, 'holds', blocked.reason);
    t.regex(
      blocked.reason,
      new RegExp(
        `^session pid ${holderPid} \\(user postgres, application "billing-batch", from 127\\.0\\.0\\.1\\), idle in transaction, .* blocks 2 sessions waiting on its lock`,
      ),
    );
    t.deepEqual(blocked.subjects, [`pid ${holderPid}`]);
    t.regex(blocked.evidence[0]!.query, /pg_blocking_pids/, 'the evidence is the statement a person re-runs');
    const long = await check(prom.base, 'postgres/long-transaction', db, { sql: onPrimary, settings: { max_s: 1 } });
    t.is(long.verdict, 'holds', long.reason);
    t.regex(
      long.reason,
      new RegExp(`^the transaction of session pid ${holderPid} .* has been open \\d+ s \\(idle in transaction; last statement: UPDATE accounts`),
    );
    await holder.query('ROLLBACK');
    await Promise.all(waiting);

    // A deadlock: each of two sessions holds the row the other then updates.
    const [a, b] = waiters as [pg.Client, pg.Client];
    await a.query('BEGIN');
    await b.query('BEGIN');
    await a.query('UPDATE accounts SET balance = 0 WHERE id = 1');
    await b.query('UPDATE accounts SET balance = 0 WHERE id = 2');
    const crossed = await Promise.allSettled([
      a.query('UPDATE accounts SET balance = 1 WHERE id = 2'),
      b.query('UPDATE accounts SET balance = 1 WHERE id = 1'),
    ]);
    t.true(
      crossed.some((r) => r.status === 'rejected' && /deadlock detected/.test(String(r.reason))),
      'PostgreSQL detected the deadlock',
    );
    await a.query('ROLLBACK');
    await b.query('ROLLBACK');
    await untilPrometheus(prom.base, `increase(pg_stat_database_deadlocks{instance="${px}",datname="postgres"}[10m])`, (s) => (s[0]?.value ?? 0) >= 1, 60_000);
    const dead = await check(prom.base, 'postgres/deadlocks', db);
    t.is(dead.verdict, 'holds', dead.reason);
    t.regex(dead.reason, /deadlocks? in the last 10m on .*database postgres/);
    t.deepEqual(dead.subjects, [px]);
    for (const e of dead.evidence) t.true((await rerun(prom.base, e.query, e.at)).length > 0, `${e.query} re-runs`);

    // Connections up to max_connections (20): 90 % is 18.
    const used = Number((await primary.sql("SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend'"))[0]!.n);
    for (let i = used; i < 19; i++) await primary.session();
    await untilPrometheus(prom.base, `sum(pg_stat_activity_count{instance="${px}"})`, (s) => (s[0]?.value ?? 0) >= 18, 60_000);
    const full = await check(prom.base, 'postgres/connections-near-limit', db);
    t.is(full.verdict, 'holds', full.reason);
    t.regex(full.reason, new RegExp(`${px.replace(/\./g, '\\.')} at 9\\d\\.\\d %|${px.replace(/\./g, '\\.')} at 100\\.0 %`));

    // The primary killed as a crash kills it: the replica's receiver stops, the exporter answers pg_up 0.
    process.kill(primary.pid!, 'SIGKILL');
    await waitFor(
      'the replica to lose its primary',
      async () => (await replica.sql('SELECT status FROM pg_stat_wal_receiver'))[0]?.status !== 'streaming',
      30_000,
      100,
    );
    const cut = await check(prom.base, 'postgres/replication', db, { sql: onReplica });
    t.is(cut.verdict, 'holds', cut.reason);
    t.regex(cut.reason, /this server is a replica whose WAL receiver is (not running|"[a-z]+"), not streaming from its primary/);
    await untilPrometheus(prom.base, `pg_up{instance="${px}"}`, (s) => s[0]?.value === 0, 60_000);
    const gone = await check(prom.base, 'postgres/down', db);
    t.is(gone.verdict, 'holds', gone.reason);
    t.regex(gone.reason, new RegExp(`1 of 2 PostgreSQL of .* cannot be reached by its exporter \\(pg_up = 0\\): ${px.replace(/\./g, '\\.')}`));
  },
);
