import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../host/config.ts';
import { databaseLabel } from '../host/doctor/doctor.service.ts';
import { loadIdentity, type InstallIdentity } from '../host/install/identity.ts';
import { InstallRepo } from '../host/install/install.repo.ts';
import { CHECKPOINT_FILE } from '../host/ledger/checkpoints.ts';
import { LedgerRepo } from '../host/ledger/ledger.repo.ts';
import { isStorageFailure } from '../host/storage/failures.ts';
import { verifyChain, type VerifyOptions, type VerifyReport } from '../host/ledger/verify.ts';
import { SecretCipher } from '../host/secrets/cipher.ts';
import { openDb, type Db } from '../host/storage/db.ts';
import { CliProblem, EXIT_FAILED, EXIT_USAGE } from './base.ts';

const notStarted = (why?: string) =>
  new CliProblem('not_started', `this install has not started yet${why === undefined ? '' : ` (${why})`}; run npm start once`, EXIT_FAILED);

/** What a command may use, opened on the service's own database. */
export interface CliContext {
  readonly config: Config;
  readonly db: Db;
  readonly installs: InstallRepo;
  /** The install's identity; a `not_started` problem when the service never ran here. */
  identity(): Promise<InstallIdentity>;
  /** The same chain verification GET /v1/ledger/verify runs. */
  verifyLedger(opts?: VerifyOptions): Promise<VerifyReport>;
}

/**
 * Opens the database without migrating (doctor reports pending migrations, it does not apply
 * them), runs `fn`, and always closes the database. Nothing is created: no empty SQLite file
 * where the service has none, no secret key file where the service keeps none.
 */
export async function withContext<T>(config: Config, fn: (ctx: CliContext) => Promise<T>): Promise<T> {
  const file = path.join(config.dataDir, 'service.db');
  if (config.databaseUrl === null && !existsSync(file)) throw notStarted(`no database at ${file}; is SERVICE_DATA_DIR the service's?`);
  // A refused connection is reported by us, with the database named; other Knex warnings go to
  // stderr so that --json on stdout stays one document.
  const db = openDb(config, { warn: (m) => m.startsWith('Acquire connection error') || process.stderr.write(`knex: ${m}\n`) });
  const installs = new InstallRepo(db);
  let identity: Promise<InstallIdentity> | null = null;
  const ctx: CliContext = {
    config,
    db,
    installs,
    identity: () => (identity ??= openIdentity(config, db, installs)),
    verifyLedger: async (opts) => verifyChain(new LedgerRepo(db), await ctx.identity(), path.join(config.dataDir, CHECKPOINT_FILE), opts),
  };
  try {
    return await fn(ctx);
  } catch (e) {
    if (isStorageFailure(e))
      throw new CliProblem('database_unreachable', `cannot reach the database (${databaseLabel(config)}): ${(e as Error).message}`, EXIT_FAILED);
    throw e;
  } finally {
    await db.destroy();
  }
}

async function openIdentity(config: Config, db: Db, installs: InstallRepo): Promise<InstallIdentity> {
  if (!(await db.schema.hasTable('install')) || (await installs.get()) === null) throw notStarted();
  // The install exists, so the key that seals its private key must exist too; SecretCipher.load
  // would create a fresh one, which can only be the wrong one.
  if (config.secretKey === null && !existsSync(path.join(config.dataDir, 'secret.key'))) {
    throw new CliProblem('no_secret_key', `no secret.key in ${config.dataDir}: set SERVICE_DATA_DIR (or SERVICE_SECRET_KEY) to the service's`, EXIT_USAGE);
  }
  const cipher = SecretCipher.load(config.secretKey, config.dataDir);
  let identity: InstallIdentity | null;
  try {
    identity = await loadIdentity(installs, cipher);
  } catch (e) {
    if (isStorageFailure(e)) throw e;
    if (e instanceof Error && /fingerprint does not match/.test(e.message)) throw new CliProblem('identity_mismatch', e.message, EXIT_FAILED);
    throw new CliProblem(
      'wrong_secret_key',
      'cannot open the install key: SERVICE_SECRET_KEY (or secret.key in SERVICE_DATA_DIR) is not the one the service uses',
      EXIT_USAGE,
    );
  }
  if (identity === null) throw notStarted();
  return identity;
}
