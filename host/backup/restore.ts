import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { describeLedger } from '../doctor/ledger-words.ts';
import { claimPidFile, DataDirInUseError, runningService } from '../install/pid-file.ts';
import { CHECKPOINT_FILE } from '../ledger/checkpoints.ts';
import type { VerifyReport } from '../ledger/verify.ts';
import { liveLeases } from '../schedule/schedule.area.ts';
import { knownMigrations } from '../storage/migrate.ts';
import { readArchive, type Manifest } from './archive.ts';
import { BackupProblem } from './backup-problem.ts';
import { openInstall } from './open-install.ts';

export interface RestoreReport {
  manifest: Manifest;
  /** Verify of the backup's ledger before anything was moved (MySQL: of the database the dump was loaded into). */
  before: VerifyReport;
  /** Verify of the restored install, in place. */
  after: VerifyReport;
  /** Where the files that were in the data directory went (`--replace`), or null. */
  movedAside: string | null;
}

/** What a data directory holds of an install, SQLite's side files included. */
const INSTALL_FILES = ['service.db', 'service.db-wal', 'service.db-shm', 'secret.key', CHECKPOINT_FILE];

/**
 * `oncall restore <file>`: puts a backup back, refusing while a service runs on the data
 * directory (or, on MySQL, while any host holds a lease on the database). It verifies the
 * backup's ledger before anything is moved, up to the head the backup names; moves the files
 * there now aside (only with `replace`, never deletes them); puts the backup's in place; and
 * verifies again where they now are. SQLite: the database comes from the file. MySQL: the
 * database is the dump loaded before (docs/operations.md); the file brings the key and
 * checkpoints, and its head must be in the database.
 */
export async function restoreBackup(config: Config, target: string, opts: { replace: boolean }, clock: Clock): Promise<RestoreReport> {
  const file = path.resolve(target);
  if (!existsSync(file)) throw new BackupProblem('no_file', `${file} does not exist`);
  const running = runningService(config.dataDir);
  if (running !== null)
    throw new BackupProblem(
      'service_running',
      `the service is running on ${config.dataDir} (pid ${running.pid}, started ${running.started_at}): stop it first`,
    );
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  let release: () => void;
  try {
    // Held while restoring: a service started meanwhile is refused.
    release = claimPidFile(config.dataDir, clock.now());
  } catch (e) {
    if (e instanceof DataDirInUseError) throw new BackupProblem('service_running', e.message);
    throw e;
  }
  const staging = await mkdtemp(path.join(config.dataDir, '.restore-'));
  try {
    const manifest = await readArchive(file, staging);
    const engine = config.databaseUrl === null ? 'sqlite' : 'mysql';
    if (manifest.engine !== engine)
      throw new BackupProblem('engine_mismatch', `the backup is of a ${manifest.engine} install; this one is configured for ${engine} (SERVICE_DATABASE_URL)`);
    const known = new Set(await knownMigrations());
    const newer = manifest.migrations.filter((m) => !known.has(m));
    if (newer.length > 0)
      throw new BackupProblem(
        'backup_newer',
        `the backup was made by oncall ${manifest.service_version}, whose database this version does not know (${newer.at(-1)}): restore it with that version`,
      );
    if (manifest.secret_key === 'environment' && config.secretKey === null)
      throw new BackupProblem('no_secret_key', 'the backup was made with SERVICE_SECRET_KEY, which it does not hold: set the same SERVICE_SECRET_KEY');
    for (const f of manifest.files) await chmod(path.join(staging, f), 0o600);
    const expect = { seq: manifest.head.seq, hash: manifest.head.hash };

    if (engine === 'mysql') await refuseLiveHosts(config, clock);
    const keyDir = manifest.secret_key === 'file' ? staging : config.dataDir;
    const before = await verified(config, { sqliteDir: engine === 'sqlite' ? staging : null, keyDir, checkpointDir: staging }, expect, 'backup_broken', (r) =>
      engine === 'sqlite'
        ? `the backup's ledger does not verify: ${describeLedger(r)}; nothing was restored (its files are in ${file})`
        : `the database does not hold this backup's ledger up to its head (seq ${manifest.head.seq}): ${describeLedger(r)}. Load the dump taken with this backup first; nothing was restored`,
    );

    const present = INSTALL_FILES.filter(
      (f) => existsSync(path.join(config.dataDir, f)) && (engine === 'sqlite' || f === 'secret.key' || f === CHECKPOINT_FILE),
    );
    let movedAside: string | null = null;
    if (present.length > 0) {
      if (!opts.replace)
        throw new BackupProblem(
          'data_dir_in_use',
          `${config.dataDir} already holds an install (${present.join(', ')}): add --replace to move those files aside (nothing is deleted)`,
        );
      movedAside = path.join(config.dataDir, `replaced-${clock.now().toISOString().replace(/[:.]/g, '-')}`);
      await mkdir(movedAside, { mode: 0o700 });
      for (const f of present) await rename(path.join(config.dataDir, f), path.join(movedAside, f));
    }
    for (const f of manifest.files) await rename(path.join(staging, f), path.join(config.dataDir, f));

    const after = await verified(
      config,
      { sqliteDir: engine === 'sqlite' ? config.dataDir : null, keyDir: config.dataDir, checkpointDir: config.dataDir },
      expect,
      'restore_broken',
      (r) => `the restored ledger does not verify: ${describeLedger(r)}` + (movedAside === null ? '' : `; the files that were there are in ${movedAside}`),
    );
    return { manifest, before, after, movedAside };
  } finally {
    await rm(staging, { recursive: true, force: true });
    release();
  }
}

async function verified(
  config: Config,
  where: { sqliteDir: string | null; keyDir: string; checkpointDir: string },
  expect: { seq: number; hash: string },
  code: string,
  explain: (r: VerifyReport) => string,
): Promise<VerifyReport> {
  const opened = await openInstall(config, where);
  try {
    const report = await opened.verify({ expect });
    if (!report.ok) throw new BackupProblem(code, explain(report));
    return report;
  } finally {
    await opened.close();
  }
}

/** MySQL: a host holding a lease is running on the database; the restore waits for all to stop. */
async function refuseLiveHosts(config: Config, clock: Clock): Promise<void> {
  const { openDb } = await import('../storage/db.ts');
  const db = openDb(config, { warn: () => undefined });
  try {
    if (!(await db.schema.hasTable('leases'))) return;
    const live = await liveLeases(db, clock.now().getTime());
    if (live.length > 0)
      throw new BackupProblem(
        'service_running',
        `a host is running on this database (${live[0]!.holder} holds ${live[0]!.name} until ${new Date(live[0]!.until_ms).toISOString()}): stop every host first`,
      );
  } finally {
    await db.destroy();
  }
}
