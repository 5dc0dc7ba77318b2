/**
 * The `sql` statements of the pack (plugin API 1.5 `named`): the only text the mysql connector
 * runs for these causes, read-only. `information_schema.INNODB_LOCK_WAITS` is MariaDB's and
 * MySQL 5.7's (MySQL 8 moved it to performance_schema.data_lock_waits: README.md). The account
 * needs PROCESS to see other sessions' transactions (README.md).
 */
export const STATEMENTS = {
  'lock-waits': {
    dialect: 'mysql',
    description: 'InnoDB transactions waiting on a row lock, each with the transaction (and session) that holds it, longest wait first.',
    text: `SELECT r.trx_mysql_thread_id AS waiting_id, TIMESTAMPDIFF(SECOND, r.trx_wait_started, NOW()) AS waiting_s,
       LEFT(r.trx_query, 200) AS waiting_query,
       b.trx_mysql_thread_id AS blocking_id, p.USER AS blocking_user, p.HOST AS blocking_host, p.DB AS blocking_db,
       p.COMMAND AS blocking_command, TIMESTAMPDIFF(SECOND, b.trx_started, NOW()) AS blocking_trx_s,
       LEFT(b.trx_query, 200) AS blocking_query, b.trx_rows_locked AS blocking_rows_locked
  FROM information_schema.INNODB_LOCK_WAITS w
  JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id
  JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id
  LEFT JOIN information_schema.PROCESSLIST p ON p.ID = b.trx_mysql_thread_id
 ORDER BY waiting_s DESC`,
  },
} as const;
