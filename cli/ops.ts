import { existsSync } from 'node:fs';
import path from 'node:path';
import { systemClock } from '../host/clock.ts';
import type { Config } from '../host/config.ts';
import { readConnectorsFile } from '../host/connectors/connectors.file.ts';
import { ConnectorsRepo } from '../host/connectors/connectors.repo.ts';
import { ConnectorService } from '../host/connectors/connectors.service.ts';
import { ConnectorKinds } from '../host/connectors/kinds.ts';
import { AppError } from '../host/errors.ts';
import { LedgerRepo } from '../host/ledger/ledger.repo.ts';
import { Ledger } from '../host/ledger/ledger.service.ts';
import { silentLogger } from '../host/log.ts';
import { MailService } from '../host/mail/mail.service.ts';
import { loadPlugins, pluginDirs, type PluginRegistry } from '../host/plugins/loader.ts';
import { SecretCipher } from '../host/secrets/cipher.ts';
import { SettingsRepo } from '../host/settings/settings.repo.ts';
import { UnitOfWork } from '../host/storage/unit-of-work.ts';
import { PLUGIN_API_VERSION } from '../host/version.ts';
import { CliProblem, EXIT_FAILED } from './base.ts';
import type { CliContext } from './context.ts';

/**
 * The connectors and mail services as the running host builds them, opened in the CLI's process
 * on the service's database: the same plugins, the same sealed secrets (so the install must have
 * started and the secret key must be the service's; `ctx.identity()` checks both). A caller that
 * has loaded the plugins already passes them in.
 */
export async function openOps(ctx: CliContext, loaded?: PluginRegistry): Promise<{ connectors: ConnectorService; mail: MailService }> {
  await ctx.identity();
  const config = ctx.config;
  const log = silentLogger();
  const cipher = SecretCipher.load(config.secretKey, config.dataDir);
  const plugins = loaded ?? (await loadPlugins({ dirs: pluginDirs(config), log, hostApi: PLUGIN_API_VERSION }));
  // Nothing here appends to the ledger (a CLI check records only the connector's last check),
  // but both services take one.
  const ledger = new Ledger({ repo: new LedgerRepo(ctx.db), clock: systemClock, work: new UnitOfWork(ctx.db) });
  const connectors = new ConnectorService({
    repo: new ConnectorsRepo(ctx.db),
    cipher,
    ledger,
    clock: systemClock,
    log,
    kinds: new ConnectorKinds(plugins.loaded, plugins.broken),
    file: readConnectorsFile(config.configDir),
  });
  const mail = new MailService({ settings: new SettingsRepo(ctx.db), cipher, ledger, clock: systemClock, log, config });
  return { connectors, mail };
}

/** An AppError of the services (unknown connector, ...) as a problem the operator can act on. */
export function asProblem(e: unknown): never {
  if (e instanceof AppError) throw new CliProblem(e.code, e.message, EXIT_FAILED);
  throw e;
}

/** Whether the SQLite file exists (MySQL: always true; reachability is checked by connecting). */
export function databaseExists(config: Config): boolean {
  return config.databaseUrl !== null || existsSync(path.join(config.dataDir, 'service.db'));
}
