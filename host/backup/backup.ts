import { copyFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { CHECKPOINT_FILE } from '../ledger/checkpoints.ts';
import { openDb } from '../storage/db.ts';
import { schemaState } from '../storage/migrate.ts';
import { VERSION } from '../version.ts';
import { writeArchive, type BackupFile, type Manifest } from './archive.ts';
import { BackupProblem } from './backup-problem.ts';
import { openInstall } from './open-install.ts';

export interface BackupReport {
  file: string;
  manifest: Manifest;
}

/**
 * `oncall backup <file>`: a consistent copy of an install while the service runs. SQLite: the
 * database through SQLite's online backup API (one step, so one read snapshot, while the
 * service goes on writing), verified before it is packed. With it, always: the secret key that
 * seals the install's secrets (unless SERVICE_SECRET_KEY holds it) and the ledger checkpoint
 * file, copied before the database so that none of its checkpoints lies beyond the copy's head.
 * MySQL: the key, the checkpoints and the head now; the database itself is the
 * `mysqldump --single-transaction` taken next (docs/operations.md). The file is a gzip'd tar,
 * mode 0600, written whole or not at all.
 */
export async function makeBackup(config: Config, target: string, clock: Clock): Promise<BackupReport> {
  const file = path.resolve(target);
  if (existsSync(file)) throw new BackupProblem('file_exists', `${file} already exists: choose another name (a backup never overwrites one)`);
  const dir = path.dirname(file);
  if (!existsSync(dir)) throw new BackupProblem('no_directory', `${dir} does not exist`);
  const source = path.join(config.dataDir, 'service.db');
  if (config.databaseUrl === null && !existsSync(source))
    throw new BackupProblem('not_started', `no database at ${source}: is SERVICE_DATA_DIR the service's?`);

  const staging = await mkdtemp(path.join(dir, '.oncall-backup-'));
  try {
    const files: BackupFile[] = [];
    // The checkpoints first, whole lines only (the service may be appending one).
    const checkpoints = path.join(config.dataDir, CHECKPOINT_FILE);
    if (existsSync(checkpoints)) {
      const text = await readFile(checkpoints, 'utf8');
      await writeFile(path.join(staging, CHECKPOINT_FILE), text.slice(0, text.lastIndexOf('\n') + 1), { mode: 0o600 });
      files.push(CHECKPOINT_FILE);
    }
    if (config.secretKey === null) {
      const key = path.join(config.dataDir, 'secret.key');
      if (!existsSync(key)) throw new BackupProblem('no_secret_key', `no secret.key in ${config.dataDir} and SERVICE_SECRET_KEY is not set`);
      await copyFile(key, path.join(staging, 'secret.key'));
      files.push('secret.key');
    }
    if (config.databaseUrl === null) {
      await onlineCopy(config, path.join(staging, 'service.db'));
      files.push('service.db');
    }

    const opened = await openInstall(config, {
      sqliteDir: config.databaseUrl === null ? staging : null,
      keyDir: config.secretKey === null ? staging : config.dataDir,
      checkpointDir: staging,
    });
    let manifest: Manifest;
    try {
      const [head, schema] = await Promise.all([opened.ledger.head(), schemaState(opened.db)]);
      const verified = config.databaseUrl === null ? await opened.verify() : null;
      manifest = {
        format: 'oncall-backup',
        version: 1,
        created_at: clock.now().toISOString(),
        service_version: VERSION,
        engine: config.databaseUrl === null ? 'sqlite' : 'mysql',
        fingerprint: opened.identity.fingerprint,
        head: { seq: head.seq, hash: head.hash },
        verify: verified === null ? null : { ok: verified.ok, problem: verified.problem, first_bad_seq: verified.first_bad_seq, checked: verified.checked },
        migrations: schema.applied,
        secret_key: config.secretKey === null ? 'file' : 'environment',
        files: files.sort(),
      };
    } finally {
      await opened.close();
    }
    // Opening the copy may have left SQLite's side files; only the database file travels.
    for (const side of ['service.db-wal', 'service.db-shm']) await rm(path.join(staging, side), { force: true });
    if (manifest.files.includes('service.db')) await stat(path.join(staging, 'service.db'));
    await writeArchive(file, staging, manifest);
    return { file, manifest };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** better-sqlite3's online backup on the service's own database file. */
interface SqliteWithBackup {
  backup(file: string, o: { progress(p: { totalPages: number; remainingPages: number }): number }): Promise<unknown>;
}

async function onlineCopy(config: Pick<Config, 'dataDir'>, to: string): Promise<void> {
  const db = openDb({ databaseUrl: null, dataDir: config.dataDir }, { warn: () => undefined });
  const client = db.client as { acquireConnection(): Promise<SqliteWithBackup>; releaseConnection(c: SqliteWithBackup): Promise<unknown> };
  try {
    const conn = await client.acquireConnection();
    try {
      // After the first (empty) step, every remaining page in one step: one read snapshot,
      // never restarted by the service's writes between steps.
      await conn.backup(to, { progress: ({ totalPages }) => totalPages });
    } finally {
      await client.releaseConnection(conn);
    }
  } finally {
    await db.destroy();
  }
}
