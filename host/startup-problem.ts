import type { Config } from './config.ts';
import { databaseLabel } from './doctor/doctor.service.ts';
import { DataDirInUseError } from './install/pid-file.ts';
import { isDiskFull } from './storage/disk-full.ts';
import { SchemaNewerError } from './storage/migrate.ts';
import { TlsFilesError } from './http/tls.ts';

const UNREACHABLE =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN|PROTOCOL_CONNECTION_LOST|ER_ACCESS_DENIED_ERROR|ER_BAD_DB_ERROR|ER_DBACCESS_DENIED_ERROR)$/;

/**
 * What stopped a start, as the one line an operator reads (main prints `Cannot start: <line>`,
 * exit 1, no stack trace), for the failures that are the machine's and not a bug: a full disk,
 * a database that cannot be reached or was migrated by a newer version, a data directory in use
 * or not writable, TLS files that cannot be used, the port taken. Anything else: null (a bug,
 * which keeps its stack trace).
 */
export function startupProblem(e: unknown, config: Pick<Config, 'dataDir' | 'databaseUrl' | 'port'>): string | null {
  if (e instanceof SchemaNewerError || e instanceof DataDirInUseError || e instanceof TlsFilesError) return e.message;
  const err = e as { code?: unknown; errno?: unknown; path?: unknown; message?: unknown } | null;
  const code = typeof err?.code === 'string' ? err.code : '';
  if (isDiskFull(e)) {
    const where = code.startsWith('ER_') ? `the database server's disk (${databaseLabel(config)})` : `the disk holding ${config.dataDir}`;
    return `${where} is full (${code || 'no space left'}): free space, then start again`;
  }
  if (UNREACHABLE.test(code) || /Knex: Timeout acquiring a connection/.test(String(err?.message)))
    return `cannot reach the database (${databaseLabel(config)}): ${code || 'timed out'}; check SERVICE_DATABASE_URL and that the server is running`;
  if (/^(EACCES|EPERM|EROFS)$/.test(code) || /^SQLITE_(READONLY|CANTOPEN)/.test(code)) {
    const where = typeof err?.path === 'string' ? err.path : config.dataDir;
    return `cannot write to ${where} (${code}): the data directory must be writable by the service's user`;
  }
  if (code === 'EADDRINUSE') return `port ${config.port} is already in use (SERVICE_PORT)`;
  return null;
}
