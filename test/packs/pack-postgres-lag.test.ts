// The standby-lag half of `postgres/replication` against Debian's PostgreSQL 15: a private
// primary and a streaming replica of it (pg_basebackup), the sql connector signing in to the
// primary with the monitoring account the README documents. The replica is made to apply what
// it receives 20 s late (`recovery_min_apply_delay`, as a delayed standby is), and the primary
// writes: its pg_stat_replication then shows the standby's replay lag. Under `max_lag_s` it is
// a near miss; over it the cause holds, naming the standby; evidence re-run gives the same lag.
import { testNeeding } from '../helpers/needs.ts';
import { check, service, type SqlConnection } from '../helpers/pack-live.ts';
import { postgresMissing, startPostgres } from '../helpers/postgres.ts';
import { waitFor } from '../helpers/wait.ts';

/** No metric is read by this cause: the placement never asks Prometheus. */
const NO_PROMETHEUS = 'http://127.0.0.1:9';

testNeeding(
  postgresMissing(),
  'postgres/replication on a real delayed standby: its replay lag under max_lag_s a near miss, over it holds naming the standby, the evidence the lag the primary shows',
  async (t) => {
    const primary = await startPostgres(t);
    await primary.sql('CREATE TABLE ticks (n int)');
    const replica = await startPostgres(t, { replicaOf: primary });
    const db = service('db', [], { technologies: ['postgres'] });
    const onPrimary: SqlConnection = { kind: 'postgres', settings: primary.settings };
    await waitFor('the replica to stream', async () => (await replica.sql('SELECT status FROM pg_stat_wal_receiver'))[0]?.status === 'streaming', 20_000, 100);

    const healthy = await check(NO_PROMETHEUS, 'postgres/replication', db, { sql: onPrimary });
    t.is(healthy.verdict, 'ruled_out', healthy.reason);

    // The standby applies WAL 20 s after the primary wrote it; the primary goes on writing.
    await replica.sql("ALTER SYSTEM SET recovery_min_apply_delay = '20s'");
    await replica.sql('SELECT pg_reload_conf()');
    const writing = setInterval(() => void primary.sql('INSERT INTO ticks VALUES (1)').catch(() => undefined), 500);
    t.teardown(() => clearInterval(writing));
    const lagOf = async () => Number((await primary.sql('SELECT EXTRACT(EPOCH FROM replay_lag)::float8 AS lag FROM pg_stat_replication'))[0]?.lag ?? 0);
    await waitFor('the standby to replay 15 s or more behind', async () => (await lagOf()) >= 15, 60_000, 250);

    const near = await check(NO_PROMETHEUS, 'postgres/replication', db, { sql: onPrimary });
    t.is(near.verdict, 'ruled_out', `near miss: behind, but under the default 60 s: ${near.reason}`);
    t.regex(near.reason, /every standby streams less than 60 s behind/);

    const behind = await check(NO_PROMETHEUS, 'postgres/replication', db, { sql: onPrimary, settings: { max_lag_s: 10 } });
    t.is(behind.verdict, 'holds', behind.reason);
    t.regex(behind.reason, /^standby \S+ from 127\.0\.0\.1 is streaming \d+(\.\d+)? s behind \(at most 10 s behind is normal here\)/);
    // The evidence is the primary's own view: the lag it read is the lag pg_stat_replication shows.
    const observed = behind.evidence[0]!.observed as { standbys: Array<{ state: string; replay_lag_s: number }> };
    t.is(observed.standbys[0]!.state, 'streaming');
    t.true(observed.standbys[0]!.replay_lag_s >= 10, JSON.stringify(observed));
    t.true(Math.abs((await lagOf()) - observed.standbys[0]!.replay_lag_s) < 5, 'read again, pg_stat_replication shows the same lag');
  },
);
