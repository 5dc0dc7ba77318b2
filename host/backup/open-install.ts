import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.ts';
import { readIdentity, type InstallIdentity } from '../install/identity.ts';
import { CHECKPOINT_FILE } from '../ledger/checkpoints.ts';
import { openLedgerStore, type LedgerStore } from '../ledger/ledger.area.ts';
import { verifyChain, type VerifyOptions, type VerifyReport } from '../ledger/verify.ts';
import { SecretCipher } from '../secrets/cipher.ts';
import { openDb, type Db } from '../storage/db.ts';
import { BackupProblem } from './backup-problem.ts';

/** An install's database opened with the key and checkpoint file found in `dir` (or SERVICE_SECRET_KEY). */
export interface OpenInstall {
  db: Db;
  identity: InstallIdentity;
  ledger: LedgerStore;
  verify(opts?: VerifyOptions): Promise<VerifyReport>;
  close(): Promise<void>;
}

/**
 * Opens a database (`sqliteDir`'s service.db, else the configured MySQL one) as an install: the
 * install key unsealed with SERVICE_SECRET_KEY or `keyDir`'s secret.key, the ledger verified
 * against `checkpointDir`'s checkpoint file. Never creates a key: a missing one is a problem.
 */
export async function openInstall(
  config: Pick<Config, 'databaseUrl' | 'secretKey'>,
  where: { sqliteDir: string | null; keyDir: string; checkpointDir: string },
): Promise<OpenInstall> {
  if (config.secretKey === null && !existsSync(path.join(where.keyDir, 'secret.key')))
    throw new BackupProblem('no_secret_key', `no secret.key in ${where.keyDir} and SERVICE_SECRET_KEY is not set: the install key cannot be opened`);
  const db = openDb({ databaseUrl: where.sqliteDir === null ? config.databaseUrl : null, dataDir: where.sqliteDir ?? where.keyDir }, { warn: () => undefined });
  try {
    const cipher = SecretCipher.load(config.secretKey, where.keyDir);
    let identity: InstallIdentity | null;
    try {
      identity = (await db.schema.hasTable('install')) ? await readIdentity(db, cipher) : null;
    } catch {
      throw new BackupProblem(
        'wrong_secret_key',
        config.secretKey === null
          ? `the secret key in ${where.keyDir} does not open this install's key`
          : "SERVICE_SECRET_KEY does not open this install's key (the service uses it over any secret.key): set the one the install was made with",
      );
    }
    if (identity === null) throw new BackupProblem('not_started', 'this database holds no install yet: the service has never started on it');
    const ledger = openLedgerStore(db);
    const checkpoints = path.join(where.checkpointDir, CHECKPOINT_FILE);
    const found = identity;
    return {
      db,
      identity: found,
      ledger,
      verify: (opts) => verifyChain(ledger, found, checkpoints, opts),
      close: async () => {
        await ledger.close();
        await db.destroy();
      },
    };
  } catch (e) {
    await db.destroy();
    throw e;
  }
}
