import { BackupProblem } from '../host/backup/backup-problem.ts';
import { BackupFileError } from '../host/backup/archive.ts';
import { isStorageFailure } from '../host/storage/failures.ts';
import { CliProblem, EXIT_FAILED, EXIT_USAGE } from './base.ts';

const USAGE = new Set(['file_exists', 'no_directory', 'no_file', 'engine_mismatch', 'no_secret_key', 'wrong_secret_key']);

/** A backup's or restore's problem as a line and an exit code (2: fix the command or settings; 1: the state refuses it). */
export function asBackupProblem(e: unknown): never {
  if (e instanceof BackupProblem) throw new CliProblem(e.code, e.message, USAGE.has(e.code) ? EXIT_USAGE : EXIT_FAILED);
  if (e instanceof BackupFileError) throw new CliProblem('not_a_backup', e.message, EXIT_USAGE);
  if (isStorageFailure(e)) throw new CliProblem('database_unreachable', `cannot reach the database: ${(e as Error).message}`, EXIT_FAILED);
  throw e;
}
