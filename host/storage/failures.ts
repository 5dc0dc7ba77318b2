/** Connection-level failures (not a constraint violated by the change itself). */
export function isStorageFailure(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return e instanceof Error && /Knex: Timeout acquiring a connection|pool is probably full|closed/i.test(e.message);
  return /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|PROTOCOL_CONNECTION_LOST|PROTOCOL_SEQUENCE_TIMEOUT|ER_CON_COUNT_ERROR|ER_ACCESS_DENIED_ERROR|ER_BAD_DB_ERROR|SQLITE_BUSY|SQLITE_LOCKED|SQLITE_IOERR.*|SQLITE_READONLY.*|SQLITE_FULL|SQLITE_CANTOPEN|SQLITE_CORRUPT)$/.test(
    code,
  );
}

/**
 * MySQL's deadlock (1213): InnoDB ended this transaction, rolled back whole, to let another
 * finish; running it again is what MySQL asks for ("try restarting transaction").
 */
export function isDeadlock(e: unknown): boolean {
  const x = e as { code?: unknown; errno?: unknown } | null;
  return x !== null && typeof x === 'object' && (x.code === 'ER_LOCK_DEADLOCK' || x.errno === 1213);
}
