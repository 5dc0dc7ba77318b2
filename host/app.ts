import type { Server } from 'restify';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import { doctorRoutes } from './doctor/doctor.routes.ts';
import { doctorDeps, runDoctor } from './doctor/doctor.service.ts';
import { Guard } from './http/guard.ts';
import { createServer } from './http/server.ts';
import { authRoutes } from './identity/auth.routes.ts';
import { BootstrapService } from './identity/bootstrap.service.ts';
import { PeopleRepo } from './identity/people.repo.ts';
import { settleMachineTokens, type MachineTokens } from './identity/tokens.ts';
import { ensureIdentity, type InstallIdentity } from './install/identity.ts';
import { InstallRepo } from './install/install.repo.ts';
import { Checkpointer } from './ledger/checkpoints.ts';
import { LedgerRepo } from './ledger/ledger.repo.ts';
import { ledgerRoutes } from './ledger/ledger.routes.ts';
import { Ledger } from './ledger/ledger.service.ts';
import { verifyChain, type VerifyReport } from './ledger/verify.ts';
import { LicenceRepo } from './licence/licence.repo.ts';
import { licenceRoutes } from './licence/licence.routes.ts';
import { LicenceService } from './licence/licence.service.ts';
import { HeldRepo } from './intake/held.repo.ts';
import { intakeRoutes } from './intake/intake.routes.ts';
import { IntakeService } from './intake/intake.service.ts';
import { Normalisers } from './intake/normalise.ts';
import { createLogger, type Logger } from './log.ts';
import { MailSettingsRepo } from './mail/mail-settings.repo.ts';
import { loadPlugins, pluginDirs, type PluginRegistry } from './plugins/loader.ts';
import { SecretCipher } from './secrets/cipher.ts';
import { ModeService } from './status/mode.service.ts';
import { statusRoutes } from './status/status.routes.ts';
import { StatusService } from './status/status.service.ts';
import { openDb, type Db } from './storage/db.ts';
import { migrate } from './storage/migrate.ts';

/** How often the background tick runs (checkpoints, mode changes caused by time). */
const TICK_MS = 10_000;

export interface AppOptions {
  clock?: Clock;
  log?: Logger;
}

export interface App {
  readonly config: Config;
  readonly clock: Clock;
  readonly log: Logger;
  readonly db: Db;
  readonly server: Server;
  readonly identity: InstallIdentity;
  readonly tokens: MachineTokens;
  readonly ledger: Ledger;
  readonly checkpoints: Checkpointer;
  readonly licences: LicenceService;
  readonly modes: ModeService;
  /** Plugins found at start: loaded, broken (reported and skipped) and superseded by newer versions. */
  readonly plugins: PluginRegistry;
  /** Authorisation checks, for areas that register their routes on `server`. */
  readonly guard: Guard;
  /** The generated admin token on the very first start, for main to print once; else null. */
  readonly adminTokenToPrint: string | null;
  verifyLedger(): Promise<VerifyReport>;
  /** The periodic work; tests call it after moving the clock. */
  tick(): Promise<void>;
  listen(port?: number, host?: string): Promise<number>;
  close(): Promise<void>;
}

/** Builds the whole service on one database: the composition root, and the only one. */
export async function createApp(config: Config, opts: AppOptions = {}): Promise<App> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config);
  const db = openDb(config, { warn: (message) => log.warn({ component: 'knex' }, message) });
  try {
    await migrate(db);
  } catch (e) {
    await db.destroy();
    throw e;
  }

  const cipher = SecretCipher.load(config.secretKey, config.dataDir);
  const installRepo = new InstallRepo(db);
  const identity = await ensureIdentity(installRepo, cipher, clock);
  const { tokens, printOnce } = await settleMachineTokens(config, installRepo);

  const ledgerRepo = new LedgerRepo(db);
  const ledger = new Ledger(ledgerRepo, clock);
  const checkpoints = new Checkpointer(ledgerRepo, identity, clock, config.dataDir);
  ledger.onCommit((head) => {
    checkpoints.maybeWrite(head).catch((err: unknown) => log.error({ err }, 'checkpoint failed'));
  });
  const verifyLedger = () => verifyChain(ledgerRepo, identity, checkpoints.file);

  const plugins = await loadPlugins({ dirs: pluginDirs(config), log });
  for (const b of plugins.broken) {
    // A broken plugin is reported, never fatal: not even when the report cannot be written.
    await ledger
      .append({ type: 'system.plugin_broken', actor: 'system', reason: b.problem.slice(0, 4000), data: { dir: b.dir, name: b.name, version: b.version } })
      .catch((err: unknown) => log.error({ err, plugin: { dir: b.dir } }, 'could not record a broken plugin in the ledger'));
  }

  const people = new PeopleRepo(db);
  const modeRef: { modes?: ModeService } = {};
  const licences = new LicenceService(new LicenceRepo(db), installRepo, identity, ledger, clock, { configDir: config.configDir, extraPublicKey: config.licencePublicKey }, (trx, record) =>
    modeRef.modes!.recordChange(trx, record),
  );
  const modes = (modeRef.modes = new ModeService(licences, people, installRepo, ledger));
  const bootstrap = new BootstrapService(people, installRepo, new MailSettingsRepo(cipher), modes, ledger, clock);
  const status = new StatusService(identity, licences, modes, people, ledger);
  const guard = new Guard(tokens, () => modes.current());

  const server = createServer(log);
  statusRoutes(server, { log, status });
  ledgerRoutes(server, { log, guard, ledger, verify: verifyLedger });
  licenceRoutes(server, { log, guard, licences });
  authRoutes(server, { log, guard, tokens, people, bootstrap });
  const intake = new IntakeService(new Normalisers(plugins.loaded), new HeldRepo(db), ledger, clock);
  intakeRoutes(server, { log, guard, intake });
  doctorRoutes(server, { log, guard, clock, run: () => runDoctor(doctorDeps({ db, config, installs: installRepo, clock, plugins: async () => plugins, verifyLedger })) });

  const tick = async (): Promise<void> => {
    await checkpoints.maybeWrite();
    await modes.sync();
    await intake.releaseStale();
  };
  await modes.sync();

  let timer: NodeJS.Timeout | null = null;
  return {
    config, clock, log, db, server, identity, tokens, ledger, checkpoints, licences, modes, guard, plugins,
    adminTokenToPrint: printOnce,
    verifyLedger,
    tick,
    listen: (port = config.port, host = config.host) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          timer = setInterval(() => tick().catch((err: unknown) => log.error({ err }, 'tick failed')), TICK_MS);
          timer.unref();
          resolve(server.address().port);
        });
      }),
    close: async () => {
      if (timer !== null) clearInterval(timer);
      if (server.server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
      await ledgerRepo.close();
      await db.destroy();
    },
  };
}
