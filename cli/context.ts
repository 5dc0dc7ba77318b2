import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Services } from '../host/app.ts';
import type { Config } from '../host/config.ts';
import { databaseLabel } from '../host/doctor/doctor.service.ts';
import { installed, readIdentity } from '../host/install/identity.ts';
import { silentLogger } from '../host/log.ts';
import { SecretCipher } from '../host/secrets/cipher.ts';
import { isStorageFailure } from '../host/storage/failures.ts';
import { openDb, type Db } from '../host/storage/db.ts';
import { CliProblem, EXIT_FAILED, EXIT_USAGE } from './base.ts';

const notStarted = (why?: string) =>
  new CliProblem('not_started', `this install has not started yet${why === undefined ? '' : ` (${why})`}; run npm start once`, EXIT_FAILED);

/** What a command may use, opened on the service's own database. */
export interface CliContext {
  readonly config: Config;
  readonly db: Db;
  /**
   * The service's areas as the host builds them (`createApp` without serving: nothing started or
   * written), built on first use; a `not_started` problem when the service never ran here.
   */
  app(): Promise<Services>;
}

/**
 * Opens the database without migrating (doctor reports pending migrations, it does not apply
 * them), runs `fn`, and always closes the app and the database. Nothing is created: no empty
 * SQLite file where the service has none, no secret key file where the service keeps none.
 */
export async function withContext<T>(config: Config, fn: (ctx: CliContext) => Promise<T>): Promise<T> {
  const file = path.join(config.dataDir, 'service.db');
  if (config.databaseUrl === null && !existsSync(file)) throw notStarted(`no database at ${file}; is SERVICE_DATA_DIR the service's?`);
  // A refused connection is reported by us, with the database named; other Knex warnings go to
  // stderr so that --json on stdout stays one document.
  const db = openDb(config, { warn: (m) => m.startsWith('Acquire connection error') || process.stderr.write(`knex: ${m}\n`) });
  let app: Promise<Services> | null = null;
  try {
    return await fn({ config, db, app: () => (app ??= openApp(config, db)) });
  } catch (e) {
    if (isStorageFailure(e))
      throw new CliProblem('database_unreachable', `cannot reach the database (${databaseLabel(config)}): ${(e as Error).message}`, EXIT_FAILED);
    throw e;
  } finally {
    await (app as Promise<Services> | null)?.then((a) => a.close()).catch(() => undefined);
    await db.destroy();
  }
}

async function openApp(config: Config, db: Db): Promise<Services> {
  if (!(await installed(db))) throw notStarted();
  // The install exists, so the key that seals its private key must exist too; SecretCipher.load
  // would create a fresh one, which can only be the wrong one.
  if (config.secretKey === null && !existsSync(path.join(config.dataDir, 'secret.key'))) {
    throw new CliProblem('no_secret_key', `no secret.key in ${config.dataDir}: set SERVICE_DATA_DIR (or SERVICE_SECRET_KEY) to the service's`, EXIT_USAGE);
  }
  try {
    if ((await readIdentity(db, SecretCipher.load(config.secretKey, config.dataDir))) === null) throw notStarted();
  } catch (e) {
    if (isStorageFailure(e) || e instanceof CliProblem) throw e;
    if (e instanceof Error && /fingerprint does not match/.test(e.message)) throw new CliProblem('identity_mismatch', e.message, EXIT_FAILED);
    throw new CliProblem(
      'wrong_secret_key',
      'cannot open the install key: SERVICE_SECRET_KEY (or secret.key in SERVICE_DATA_DIR) is not the one the service uses',
      EXIT_USAGE,
    );
  }
  // Loaded here: a command that never needs the areas (doctor on an unreachable database) does not load them.
  const { createApp } = await import('../host/app.ts');
  return createApp(config, { serve: false, db, log: silentLogger() });
}
