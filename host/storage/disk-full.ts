/**
 * Whether a failure means the disk (ours or the database server's) is full, whatever reported
 * it: Node's file calls (ENOSPC, EDQUOT), SQLite (SQLITE_FULL, "database or disk is full") or
 * MySQL/MariaDB (ER_RECORD_FILE_FULL 1114, ER_DISK_FULL 1021, errno 28 in the server's message).
 * Follows `cause` chains, since Knex and our own errors may wrap the original.
 */
export function isDiskFull(e: unknown): boolean {
  for (let err = e, depth = 0; err !== null && typeof err === 'object' && depth < 5; err = (err as { cause?: unknown }).cause, depth++) {
    const { code, errno, message } = err as { code?: unknown; errno?: unknown; message?: unknown };
    if (typeof code === 'string' && /^(ENOSPC|EDQUOT|SQLITE_FULL|ER_RECORD_FILE_FULL|ER_DISK_FULL)$/.test(code)) return true;
    if (typeof code === 'string' && code.startsWith('ER_') && (errno === 1114 || errno === 1021)) return true;
    if (typeof message === 'string' && /database or disk is full|no space left on device|errno: 28\b/i.test(message)) return true;
  }
  return false;
}
