/**
 * The `sql` statements of the pack (plugin API 1.5 `named`): the only text the postgres connector
 * runs for these causes, read-only, in a read-only transaction with a statement timeout and a row
 * cap. The monitoring account needs `pg_monitor` to see every session's query (README.md).
 */
export const STATEMENTS = {
  'blocking-sessions': {
    dialect: 'postgres',
    description: 'Sessions waiting on a lock, each with the session that blocks it (pg_blocking_pids), longest wait first.',
    text: `SELECT w.pid AS waiting_pid, w.usename AS waiting_user, w.datname AS database,
       round(EXTRACT(EPOCH FROM (clock_timestamp() - w.query_start))::numeric, 1)::float8 AS waiting_s,
       left(w.query, 200) AS waiting_query,
       b.pid AS blocking_pid, b.usename AS blocking_user, b.application_name AS blocking_application,
       host(b.client_addr) AS blocking_client, b.state AS blocking_state,
       round(EXTRACT(EPOCH FROM (clock_timestamp() - b.xact_start))::numeric, 1)::float8 AS blocking_xact_s,
       left(b.query, 200) AS blocking_query
  FROM pg_stat_activity w
  CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS bp(pid)
  JOIN pg_stat_activity b ON b.pid = bp.pid
 WHERE w.wait_event_type = 'Lock'
 ORDER BY waiting_s DESC NULLS LAST`,
  },
  'long-transactions': {
    dialect: 'postgres',
    description: 'Open transactions, oldest first, with their session, state and last statement.',
    text: `SELECT pid, usename AS user_name, datname AS database, application_name, host(client_addr) AS client, state,
       round(EXTRACT(EPOCH FROM (clock_timestamp() - xact_start))::numeric, 1)::float8 AS xact_s,
       left(query, 200) AS query
  FROM pg_stat_activity
 WHERE xact_start IS NOT NULL AND backend_type = 'client backend' AND pid <> pg_backend_pid()
 ORDER BY xact_start`,
  },
  replication: {
    dialect: 'postgres',
    description: 'Whether this server is a replica and how its WAL receiver fares, or, on a primary, its replicas and their replay lag.',
    text: `SELECT pg_is_in_recovery() AS replica,
       (SELECT status FROM pg_stat_wal_receiver LIMIT 1) AS receiver,
       (SELECT sender_host FROM pg_stat_wal_receiver LIMIT 1) AS primary_host,
       CASE WHEN pg_is_in_recovery() THEN round(EXTRACT(EPOCH FROM (clock_timestamp() - pg_last_xact_replay_timestamp()))::numeric, 1)::float8 END AS replay_age_s,
       r.application_name AS standby, host(r.client_addr) AS standby_client, r.state AS standby_state,
       round(EXTRACT(EPOCH FROM r.replay_lag)::numeric, 3)::float8 AS standby_replay_lag_s
  FROM (SELECT 1) AS one
  LEFT JOIN pg_stat_replication r ON true`,
  },
} as const;
