import type { Server } from 'restify';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import { ConnectorChecker } from './connectors/checker.ts';
import { readConnectorsFile } from './connectors/connectors.file.ts';
import { ConnectorsRepo } from './connectors/connectors.repo.ts';
import { connectorRoutes } from './connectors/connectors.routes.ts';
import { ConnectorService } from './connectors/connectors.service.ts';
import { ConnectorKinds } from './connectors/kinds.ts';
import { discoveryRoutes } from './discovery/discovery.routes.ts';
import { DiscoveryService } from './discovery/discovery.service.ts';
import { JobsRepo } from './discovery/jobs.repo.ts';
import { createEstateArea, type EstateArea } from './estate/estate.area.ts';
import { doctorRoutes } from './doctor/doctor.routes.ts';
import { doctorDeps, runDoctor, type DoctorExtras } from './doctor/doctor.service.ts';
import { createGovernance, type Governance } from './governance/governance.ts';
import { consoleRoutes } from './http/console.ts';
import { Guard } from './http/guard.ts';
import { createServer } from './http/server.ts';
import { accessRoutes } from './identity/access.routes.ts';
import { AccessPolicyService } from './identity/access.service.ts';
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
import { verifyChain, type VerifyOptions, type VerifyReport } from './ledger/verify.ts';
import { LicenceRepo } from './licence/licence.repo.ts';
import { LicenceCheck, LicenceCheckRepo } from './licence/licence-check.ts';
import { LicenceLimitsRepo, ServiceLimits } from './licence/licence-limits.ts';
import { liveRoutes } from './live/live.routes.ts';
import { LiveService } from './live/live.service.ts';
import { TickMonitor } from './live/tick-monitor.ts';
import { parseQuery } from './episodes/query/parse.ts';
import { VERSION } from './version.ts';
import { licenceRoutes } from './licence/licence.routes.ts';
import { LicenceService } from './licence/licence.service.ts';
import { EpisodeReader } from './episodes/episode.reader.ts';
import { EpisodeRepo } from './episodes/episode.repo.ts';
import { episodeRoutes } from './episodes/episode.routes.ts';
import { EpisodeService } from './episodes/episode.service.ts';
import { FiringsRepo } from './intake/firings.repo.ts';
import { HeldRepo } from './intake/held.repo.ts';
import { intakeRoutes } from './intake/intake.routes.ts';
import { IntakeService } from './intake/intake.service.ts';
import { Normalisers } from './intake/normalise.ts';
import { createLogger, type Logger } from './log.ts';
import { policyRoutes } from './policy/policy.routes.ts';
import { PolicyService } from './policy/policy.service.ts';
import { MailSettingsRepo } from './mail/mail-settings.repo.ts';
import { mailRoutes } from './mail/mail.routes.ts';
import { MailService, NO_PROVIDER } from './mail/mail.service.ts';
import { loadPlugins, pluginDirs, type PluginRegistry } from './plugins/loader.ts';
import { SecretCipher } from './secrets/cipher.ts';
import { SettingsRepo } from './settings/settings.repo.ts';
import { ClientAddress } from './http/client-address.ts';
import { AdminLoginService } from './identity/admin-login.service.ts';
import { AttemptsRepo } from './identity/attempts.repo.ts';
import { LimitLocksRepo } from './identity/limit-locks.repo.ts';
import { RateLimits } from './identity/rate-limits.ts';
import { Refusals } from './identity/refusals.ts';
import { peopleRoutes } from './identity/people.routes.ts';
import { PeopleService } from './identity/people.service.ts';
import { SessionService } from './identity/session.service.ts';
import { SessionsRepo } from './identity/sessions.repo.ts';
import { SignInCodesRepo } from './identity/sign-in-codes.repo.ts';
import { SignInService } from './identity/sign-in.service.ts';
import { ModeService } from './status/mode.service.ts';
import { statusRoutes } from './status/status.routes.ts';
import { StatusService } from './status/status.service.ts';
import { LeaseRepo } from './schedule/lease.repo.ts';
import { Poller } from './schedule/poller.ts';
import { openDb, type Db } from './storage/db.ts';
import { NotifyDelivery } from './notify/delivery.service.ts';
import { Notifier, OnCallAudience } from './notify/notifier.ts';
import { NotifySettingsRepo } from './notify/notify-settings.repo.ts';
import { NotifySettingsService } from './notify/notify-settings.service.ts';
import { notifyRoutes } from './notify/notify.routes.ts';
import { OutboxRepo } from './notify/outbox.repo.ts';
import { migrate } from './storage/migrate.ts';
import { clip } from './text.ts';

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
  /** Grouping of held alerts into episodes; tests await `episodes.process()` after a push. */
  readonly episodes: EpisodeService;
  /** Sign-in; tests await `signIn.idle()` for the codes asked for to be sent. */
  readonly signIn: SignInService;
  /** Autonomy, approvals, the halt switch and the action gate every action passes. */
  readonly governance: Governance;
  /** Discovery jobs; tests await `discovery.idle()` for a started job to end. */
  readonly discovery: DiscoveryService;
  /** The estate: services, overrides, suggestions, the build, and the resolver intake places alerts with. */
  readonly estate: EstateArea;
  /** Online licence confirmation every 6 hours (SERVICE_LICENCE_CHECK). */
  readonly licenceCheck: LicenceCheck;
  /** Tier limits on services (services named by alerts against the licence's number). */
  readonly serviceLimits: ServiceLimits;
  /** Polls alert-source connectors; tests call `poller.pollNow()`. */
  readonly poller: Poller;
  /** Delivers notifications from the outbox; tests call `notifications.run()` (the tick does too). */
  readonly notifications: NotifyDelivery;
  /** Re-checks every connector every 5 minutes under a lease; tests call `connectorChecks.runNow()`. */
  readonly connectorChecks: ConnectorChecker;
  /** Authorisation checks, for areas that register their routes on `server`. */
  readonly guard: Guard;
  /** The generated admin token on the very first start, for main to print once; else null. */
  readonly adminTokenToPrint: string | null;
  verifyLedger(opts?: VerifyOptions): Promise<VerifyReport>;
  /** The periodic work; tests call it after moving the clock. */
  tick(): Promise<void>;
  listen(port?: number, host?: string): Promise<number>;
  close(): Promise<void>;
}

/** The earliest-created enabled owner's address, or null. */
function firstOwner(list: { email: string; role: string; enabled: boolean; created_at: string }[]): string | null {
  const owners = list.filter((p) => p.role === 'owner' && p.enabled).sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
  return owners[0]?.email ?? null;
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
  const settings = new SettingsRepo(db);
  const installRepo = new InstallRepo(db);
  const identity = await ensureIdentity(installRepo, cipher, clock);
  const { tokens, printOnce } = await settleMachineTokens(config, installRepo);

  const ledgerRepo = new LedgerRepo(db);
  const ledger = new Ledger(ledgerRepo, clock);
  const checkpoints = new Checkpointer(ledgerRepo, identity, clock, config.dataDir, log);
  ledger.onCommit((head) => {
    checkpoints.maybeWrite(head).catch((err: unknown) => log.error({ err }, 'checkpoint failed'));
  });
  // A checkpoint the last run owed (it stopped between a commit and its checkpoint) is written
  // before anything else is appended: verify counts on it (CHECKPOINT_MAX_GAP).
  await checkpoints.maybeWrite().catch((err: unknown) => log.error({ err }, 'checkpoint failed'));
  const verifyLedger = (opts?: VerifyOptions) => verifyChain(ledgerRepo, identity, checkpoints.file, opts);

  const plugins = await loadPlugins({ dirs: pluginDirs(config), log });
  for (const b of plugins.broken) {
    // A broken plugin is reported, never fatal: not even when the report cannot be written.
    await ledger
      .append({ type: 'system.plugin_broken', actor: 'system', reason: clip(b.problem, 4000), data: { dir: b.dir, name: b.name, version: b.version } })
      .catch((err: unknown) => log.error({ err, plugin: { dir: b.dir } }, 'could not record a broken plugin in the ledger'));
  }

  const people = new PeopleRepo(db);
  const modeRef: { modes?: ModeService } = {};
  const licences = new LicenceService(new LicenceRepo(db), installRepo, identity, ledger, clock, { configDir: config.configDir, extraPublicKey: config.licencePublicKey }, (trx, record) =>
    modeRef.modes!.recordChange(trx, record),
  );
  const modes = (modeRef.modes = new ModeService(licences, people, installRepo, ledger));
  const bootstrap = new BootstrapService(people, installRepo, new MailSettingsRepo(settings, cipher), modes, ledger, clock);
  const status = new StatusService(identity, licences, modes, people, ledger, checkpoints);
  const guard = new Guard(tokens, () => modes.current(), clock);

  const server = createServer(log);
  consoleRoutes(server);
  statusRoutes(server, { log, status });
  ledgerRoutes(server, { log, guard, ledger, verify: verifyLedger });
  licenceRoutes(server, { log, guard, licences });
  const sessions = new SessionService(new SessionsRepo(db), clock);
  guard.useSessions(sessions);
  const limitLocks = new LimitLocksRepo(db);
  const limits = new RateLimits(new AttemptsRepo(db), limitLocks, clock);
  const refusals = new Refusals(limitLocks, limits, ledger, clock);
  const adminLogin = new AdminLoginService({ breakGlass: (): Promise<{ open: boolean; reason: string | null }> => mail.breakGlass(), sessions, limits, refusals, ledger });
  const mail = new MailService({ settings, cipher, ledger, clock, log, config, delivered: (): Promise<unknown> => adminLogin.breakGlassClosed() });
  mailRoutes(server, { log, guard, mail });
  // A test e-mail asked for with the admin token and no address goes to the on-call recipients
  // (the notifications settings), else the first owner.
  mail.useFirstOwner(async () => firstOwner(await people.list()));
  mail.useOnCallRecipients(async () => (await new NotifySettingsRepo(settings).get()).recipients);
  const access = new AccessPolicyService({ settings, people, ledger, clock, sessions });
  accessRoutes(server, { log, guard, access });
  sessions.useAccess(access);
  bootstrap.useAccess(access);
  status.useBreakGlass(() => mail.publicBreakGlass());
  status.useEmailCodes(() => mail.emailCodes());
  const signIn = new SignInService({ people, codes: new SignInCodesRepo(db), limits, refusals, sessions, access, mail, ledger, clock, log, codeKey: cipher.derive('sign-in-codes') });
  authRoutes(server, { log, guard, tokens, people, bootstrap, signIn, adminLogin, sessions, client: new ClientAddress(config.trustedProxies) });
  peopleRoutes(server, { log, guard, people: new PeopleService(people, sessions, access, ledger, clock) });
  const policy = new PolicyService({ settings, ledger, clock, log, configDir: config.configDir });
  await policy.start();
  policyRoutes(server, { log, guard, policy });
  const governance = createGovernance({
    db, server, log, guard, ledger, clock, known: { knownServices: () => serviceLimits.knownServices() },
    policy,
    coverage: { covers: (service) => estate.covers(service) },
    facts: { ownerOf: (service) => estate.facts.ownerOf(service) },
  });
  const connectors = new ConnectorService({ repo: new ConnectorsRepo(db), cipher, ledger, clock, log, kinds: new ConnectorKinds(plugins.loaded, plugins.broken), file: readConnectorsFile(config.configDir) });
  connectorRoutes(server, { log, guard, connectors });
  const discovery = new DiscoveryService({ repo: new JobsRepo(db), connectors, ledger, clock, log, timeoutS: config.discoverTimeoutS });
  discoveryRoutes(server, { log, guard, discovery });
  const episodeRepo = new EpisodeRepo(db);
  const estate = await createEstateArea({ db, server, log, guard, ledger, clock, config, people, licences, connectors, discovery, episodes: episodeRepo, held: new HeldRepo(db) });
  // Licence confirmation every 6 hours, tier limits on services, doctor's components, GET /v1/live.
  const licenceCheck = new LicenceCheck({
    repo: new LicenceCheckRepo(db), licences, ledger, clock, log: log.child({ component: 'licence-check' }),
    mode: config.licenceCheck, server: config.licenceServer, fingerprint: identity.fingerprint, version: VERSION,
  });
  await licenceCheck.load();
  licences.useConfirmation(licenceCheck.hook);
  const serviceLimits = new ServiceLimits({ repo: new LicenceLimitsRepo(db), licences, ledger, clock, log, counted: { servicesInOrder: () => estate.estate.addedInOrder() } });
  status.useLicenceUsage(() => serviceLimits.usage());
  // Notifications: the on-call recipients and targets, the outbox the episodes write, delivery.
  const notifySettings = new NotifySettingsRepo(settings);
  const outbox = new OutboxRepo(db);
  const notifications = new NotifyDelivery({ outbox, settings: notifySettings, episodes: episodeRepo, mail, targets: connectors, ledger, clock, log: log.child({ component: 'notify' }) });
  notifyRoutes(server, {
    log, guard,
    settings: new NotifySettingsService({
      repo: notifySettings, ledger, clock,
      directory: {
        person: (email, trx) => people.get(email, trx),
        connector: async (name) => (await connectors.list()).connectors.find((c) => c.name === name) ?? null,
        canNotify: (kind) => connectors.canNotify(kind),
        notifyKinds: () => connectors.kinds.catalogue().filter((k) => k.capabilities.includes('notify')).map((k) => k.kind),
      },
    }),
    status: () => notifications.status(),
  });
  const ticks = new TickMonitor(clock, TICK_MS);
  const doctorExtras: DoctorExtras = {
    connectors: () => connectors.list(),
    mail: () => mail.breakGlass(),
    licence: async () => ({ status: await licences.status(), confirmation: await licenceCheck.view(), usage: await serviceLimits.usage(), overLimit: await serviceLimits.overLimit() }),
    schedules: async () => ticks.seen(),
    notifications: async () => {
      const glass = await mail.breakGlass();
      return { ...(await notifications.status()), mailProblem: glass.open && glass.reason === NO_PROVIDER ? NO_PROVIDER : null };
    },
  };
  const liveHeld = new HeldRepo(db);
  const liveEpisodes = new EpisodeRepo(db);
  const liveJobs = new JobsRepo(db);
  const openQuery = parseQuery('state:open');
  liveRoutes(server, { log, guard, live: new LiveService({
    clock, debounceS: config.debounceS,
    ungrouped: () => liveHeld.ungroupedByService(),
    openEpisodes: async (limit) => (await liveEpisodes.list({ limit, incidentsOnly: false, query: openQuery, after: null, nowMs: clock.now().getTime() })).episodes
      .map((e) => ({ id: e.id, kind: e.kind, service: e.service, t_open: e.t_open, alerts: e.alerts })),
    pendingApprovals: async (limit) => (await governance.approvals.list({ state: 'pending', limit }))
      .map((a) => ({ id: a.id, kind: a.kind, service: a.service, summary: a.summary, requested_by: a.requested_by, requested_at: a.requested_at, expires_at: a.expires_at })),
    discoveryJobs: async () => {
      const job = await liveJobs.running();
      return job === null ? [] : [{ id: job.id, kind: 'discovery', started_at: job.started_at, progress: { state: job.state, connections: job.connections, found: job.found, failed: job.failed } }];
    },
    polls: () => poller.schedule(),
    tick: () => ticks.seen(),
  }) });
  /** The tick's last step: confirmation when due, limits, the mode change either may cause. */
  const licenceTick = () => ticks.last(async () => {
    await licenceCheck.tick();
    await serviceLimits.tick();
    await modes.sync();
  });
  const held = new HeldRepo(db);
  const firings = new FiringsRepo(db);
  const notifier = new Notifier({ outbox, audience: new OnCallAudience(notifySettings), clock, publicUrl: config.publicUrl, nudge: () => notifications.nudge() });
  const episodes = new EpisodeService({ episodes: episodeRepo, held, firings, ledger, clock, log, debounceS: config.debounceS, notifier });
  const intake = new IntakeService({ normalisers: new Normalisers(plugins.loaded), held, firings, membership: episodeRepo, ledger, clock, changed: () => episodes.nudge(), resolver: estate.estate });
  intakeRoutes(server, { log, guard, intake });
  const poller = new Poller({ connectors, intake, leases: new LeaseRepo(db), clock, log, operating: async () => (await modes.current()) === 'operating' });
  server.server.once('listening', () => poller.start());
  const connectorChecks = new ConnectorChecker({ connectors, leases: new LeaseRepo(db), clock, log, holder: poller.holder });
  episodeRoutes(server, { log, guard, reader: new EpisodeReader(episodeRepo, ledger, clock) });
  doctorRoutes(server, { log, guard, clock, run: () => runDoctor(doctorDeps({ db, config, installs: installRepo, clock, plugins: async () => plugins, verifyLedger, extras: doctorExtras, judge: 'service' })) });

  const tick = async (): Promise<void> => {
    await checkpoints.maybeWrite();
    await modes.sync();
    await intake.releaseStale();
    await episodes.process();
    await notifications.run();
    await firings.prune(clock.now().getTime());
    await signIn.prune();
    await refusals.recordDue();
    await governance.tick();
    await licenceTick();
    // In the background: a slow connector must not hold up the tick.
    connectorChecks.tick();
  };
  await modes.sync();

  let timer: NodeJS.Timeout | null = null;
  return {
    config, clock, log, db, server, identity, tokens, ledger, checkpoints, licences, modes, guard, plugins, episodes, signIn, governance, discovery, estate,
    licenceCheck, serviceLimits, poller, notifications, connectorChecks,
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
      await poller.stop();
      await connectorChecks.idle();
      if (server.server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
      await episodes.stop();
      await notifications.stop();
      await signIn.idle();
      // Checkpoints the last commits made due are written before the database goes.
      await checkpoints.idle();
      await ledgerRepo.close();
      await db.destroy();
    },
  };
}
