import { mkdirSync } from 'node:fs';
import type { Server as HttpsServer } from 'node:https';
import type { Server } from 'restify';
import type { Area } from './area.ts';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import type { ConnectorChecker } from './schedule/connector-checker.ts';
import { createConnectorsArea } from './connectors/connectors.area.ts';
import type { ConnectorService } from './connectors/connectors.service.ts';
import { createDiscoveryArea } from './discovery/discovery.area.ts';
import type { DiscoveryService } from './discovery/discovery.service.ts';
import { createDigestArea, type DigestArea } from './digest/digest.area.ts';
import { createDoctorArea } from './doctor/doctor.area.ts';
import { createEpisodeStore } from './episodes/episode-store.ts';
import { createEpisodesArea } from './episodes/episodes.area.ts';
import { createEstateArea, type EstateArea } from './estate/estate.area.ts';
import type { EpisodeService } from './episodes/episode.service.ts';
import { createApprovals, createGovernance, type Governance } from './governance/governance.ts';
import type { ProposedChange } from './estate/estate.service.ts';
import { createHealthArea } from './health/health.area.ts';
import type { Readiness } from './health/readiness.service.ts';
import { consoleRoutes } from './http/console.ts';
import { Guard } from './http/guard.ts';
import { ClientAddress } from './http/client-address.ts';
import { connectionCap, DEFAULT_LIMITS, guardConnections, openFilesLimit } from './http/connections.ts';
import { createServer } from './http/server.ts';
import { readTlsFiles, TlsReloader } from './http/tls.ts';
import { createIdentityArea } from './identity/identity.area.ts';
import { createPeople } from './identity/people.ts';
import type { SignInService } from './identity/sign-in.service.ts';
import { settleMachineTokens, type MachineTokens } from './identity/tokens.ts';
import { createHeldStore } from './intake/held-store.ts';
import type { IntakeService } from './intake/intake.service.ts';
import { createIntakeArea } from './intake/intake.area.ts';
import { CauseCatalogue } from './investigation/catalogue.ts';
import { createFindings, createInvestigationArea } from './investigation/investigation.area.ts';
import { actionConnectors } from './acting/action-connectors.ts';
import { createActingArea, createActionPaths, type ActingArea } from './acting/acting.area.ts';
import type { InvestigationArea } from './investigation/investigation.area.ts';
import type { InvestigationLimits } from './investigation/investigation.service.ts';
import { ensureIdentity, loadIdentity, type InstallIdentity } from './install/identity.ts';
import { claimPidFile, runningService } from './install/pid-file.ts';
import { InstallRepo } from './install/install.repo.ts';
import type { Checkpointer } from './ledger/checkpoints.ts';
import { createLedgerArea } from './ledger/ledger.area.ts';
import type { Ledger } from './ledger/ledger.service.ts';
import type { VerifyOptions, VerifyReport } from './ledger/verify.ts';
import type { ServiceLimits } from './licence/licence-limits.ts';
import { createLicenceArea } from './licence/licence.area.ts';
import type { LicenceService } from './licence/licence.service.ts';
import { createLicences, type LicenceConfirmation } from './licence/licences.ts';
import { createKeychainArea } from './keychain/keychain.area.ts';
import type { KeychainService } from './keychain/keychain.service.ts';
import { createLiveArea } from './live/live.area.ts';
import { createLogger, type Logger } from './log.ts';
import { createMailArea } from './mail/mail.area.ts';
import type { MailService } from './mail/mail.service.ts';
import { createMetricsArea } from './metrics/metrics.area.ts';
import type { NotifyDelivery } from './notify/delivery.service.ts';
import { createNotifyArea } from './notify/notify.area.ts';
import { createOnCall } from './notify/on-call.ts';
import { withDeclaredReads } from './plugins/capabilities.ts';
import { loadPlugins, pluginDirs, type PluginRegistry } from './plugins/loader.ts';
import { createPolicyArea } from './policy/policy.area.ts';
import { createScheduleArea } from './schedule/schedule.area.ts';
import { LeaseRepo } from './schedule/lease.repo.ts';
import type { Poller } from './schedule/poller.ts';
import { SecretCipher } from './secrets/cipher.ts';
import { SettingsRepo } from './settings/settings.repo.ts';
import type { ModeService } from './status/mode.service.ts';
import { createStatusArea } from './status/status.area.ts';
import { createStudyArea, type StudyArea } from './study/study.area.ts';
import { createStudyStore } from './study/study-store.ts';
import { createSsoStore } from './sso/sso-store.ts';
import { createSsoArea, type SsoArea } from './sso/sso.area.ts';
import { dialect, limitStatements, openDb, type Db } from './storage/db.ts';
import { migrate } from './storage/migrate.ts';
import { DatabaseClock } from './storage/database-clock.ts';
import { UnitOfWork } from './storage/unit-of-work.ts';
import { clip } from './text.ts';
import { createShutdown, type CloseOptions } from './shutdown.ts';
import { createTick } from './tick.ts';

/** How often the background tick runs (checkpoints, mode changes caused by time). */
const TICK_MS = 10_000;

export interface AppOptions {
  clock?: Clock;
  log?: Logger;
  /** Tests shorten the investigation's cut-offs (20 s per check, 2 minutes per investigation). */
  investigationLimits?: Partial<InvestigationLimits>;
  /** Every wait of the study (pauses, pacing, standing aside); tests advance their clock instead of sleeping. */
  studyWait?: (ms: number) => Promise<void>;
  /** No tick every 10 s of real time once listening: a test that moves its clock calls `tick()` itself. */
  manualTick?: boolean;
  /**
   * false: the CLI's build (cli/context.ts): the same areas on `db` as it is, to call them in this
   * process, and nothing started or written while building: no server, data directory, pid file
   * or migrations; no identity or admin token created (the install must have started); no owed
   * checkpoint, broken-plugin events, policy.json, estate.json or autonomy.json brought into force,
   * mode sync or claims given back; no tick, and the workers stopped, so that nothing nudges them.
   */
  serve?: boolean;
  /** With `serve: false`, the database the caller opened (and closes). */
  db?: Db;
}

/** The services of the areas, as the CLI uses them (`createApp(config, {serve: false, db})`). */
export interface Services {
  readonly config: Config;
  readonly clock: Clock;
  readonly log: Logger;
  readonly db: Db;
  readonly identity: InstallIdentity;
  readonly tokens: MachineTokens;
  readonly ledger: Ledger;
  readonly checkpoints: Checkpointer;
  readonly licences: LicenceService;
  readonly modes: ModeService;
  /** Plugins found at start: loaded, broken (reported and skipped) and superseded by newer versions. */
  readonly plugins: PluginRegistry;
  readonly connectors: ConnectorService;
  readonly mail: MailService;
  /** Alert intake; tests call `intake.checkHeartbeats()` (the tick does too). */
  readonly intake: IntakeService;
  /** Grouping of held alerts into episodes; tests await `episodes.process()` after a push. */
  readonly episodes: EpisodeService;
  /** Investigation of episodes and checks run by hand; tests await `investigation.investigations.run()`. */
  readonly investigation: InvestigationArea;
  /** The action path after each diagnosis; tests await `acting.acting.run()`. */
  readonly acting: ActingArea;
  /** The study (read-only rehearsal); tests await `study.study.idle()`. */
  readonly study: StudyArea;
  /** Sign-in; tests await `signIn.idle()` for the codes asked for to be sent. */
  readonly signIn: SignInService;
  /** Autonomy, approvals, the halt switch and the action gate every action passes. */
  readonly governance: Governance;
  /** Discovery jobs; tests await `discovery.idle()` for a started job to end. */
  readonly discovery: DiscoveryService;
  /** The estate: services, overrides, suggestions, the build, and the resolver intake places alerts with. */
  readonly estate: EstateArea;
  /** Online licence confirmation every 6 hours (SERVICE_LICENCE_CHECK). */
  readonly licenceCheck: LicenceConfirmation;
  /** Tier limits on services (services named by alerts against the licence's number). */
  readonly serviceLimits: ServiceLimits;
  /** Polls alert-source connectors; tests call `poller.pollNow()`. */
  readonly poller: Poller;
  /** Delivers notifications from the outbox; tests call `notifications.run()` (the tick does too). */
  readonly notifications: NotifyDelivery;
  /** Re-checks every connector every 5 minutes under a lease; tests call `connectorChecks.runNow()`. */
  readonly connectorChecks: ConnectorChecker;
  /** GET /v1/digest and the daily e-mail; tests call `digest.mailer.sendFor(clock.now())`. */
  readonly digest: DigestArea;
  /** Single sign-on and the directory; tests call `sso.sync.now(…)` or await `sso.idle()`. */
  readonly sso: SsoArea;
  /** The keychain; tests call `keychain.tick()` after moving the clock, or POST /v1/keychain/sync. */
  readonly keychain: KeychainService;
  verifyLedger(opts?: VerifyOptions): Promise<VerifyReport>;
  /** The service's shutdown (`App.close`); the CLI's build closes the ledger's own connections (the caller, the database). */
  close(opts?: CloseOptions): Promise<void>;
}

export interface App extends Services {
  readonly server: Server;
  /** GET /health/ready's answer; the shutdown sequence calls `readiness.markShuttingDown()` first. */
  readonly readiness: Readiness;
  /** Re-reads SERVICE_TLS_CERT/KEY when they change (null without TLS); `reload()` does it now. */
  readonly tls: TlsReloader | null;
  /** Authorisation checks, for areas that register their routes on `server`. */
  readonly guard: Guard;
  /** The generated admin token on the very first start, for main to print once; else null. */
  readonly adminTokenToPrint: string | null;
  /** The periodic work; tests call it after moving the clock. */
  tick(): Promise<void>;
  listen(port?: number, host?: string): Promise<number>;
  /** The shutdown; with `deadlineMs` it ends by then whatever is still running (main: SIGTERM). */
  close(opts?: CloseOptions): Promise<void>;
}

export type { CloseOptions };

/**
 * Builds the whole service on one database: the composition root, and the only one. Each area
 * is built by its factory from what it needs, in dependency order (no setter, no holder, one
 * instance of each repo); `mount` keeps it so that its routes are registered once the guard
 * exists. Adding an area is one line. With `serve: false` the same areas answer as `Services`,
 * built on the caller's database with nothing started (the CLI's build). See docs/architecture.md.
 */
export async function createApp(config: Config, opts: AppOptions & { serve: false; db: Db }): Promise<Services>;
export async function createApp(config: Config, opts?: AppOptions): Promise<App>;
export async function createApp(config: Config, opts: AppOptions = {}): Promise<App | Services> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config);
  // The service's start; false for the CLI's build, which starts and writes nothing (AppOptions.serve).
  const start = opts.serve !== false;
  // Before the database: TLS files that cannot be used, or a data directory another service
  // process holds, stop the start before anything is opened.
  const tlsFiles = !start || config.tls === null ? null : readTlsFiles(config.tls);
  if (start) mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  // Another app of this very process on the data directory (tests only: one process serves a data directory).
  const besideAnother = start && runningService(config.dataDir)?.pid === process.pid;
  const releasePidFile = start ? claimPidFile(config.dataDir, clock.now()) : () => undefined;
  const db = opts.db ?? openDb(config, { warn: (message) => log.warn({ component: 'knex' }, message), timeoutMs: config.databaseTimeoutS * 1000 });
  if (start) {
    try {
      await migrate(db);
    } catch (e) {
      await db.destroy();
      releasePidFile();
      throw e;
    }
    // From now on a frozen database fails each statement after the timeout (answered 503) instead of hanging it.
    limitStatements(db, config.databaseTimeoutS * 1000);
  }
  // The clock leases are judged by: the database's on MySQL (docs/operations.md, "Clocks").
  const leaseClock = new DatabaseClock(db, clock, log);
  await leaseClock.measure().catch((err: unknown) => log.warn({ err }, "could not read the database's clock"));
  const areas: Area[] = [];
  const mount = <A extends Area>(area: A): A => (areas.push(area), area);
  const { readiness } = mount(createHealthArea({ db, dataDir: config.dataDir, clock, log }));

  // Storage and the install: the unit of work, secrets, settings documents, who this install is.
  const work = new UnitOfWork(db);
  const cipher = SecretCipher.load(config.secretKey, config.dataDir);
  const settings = new SettingsRepo(db);
  const install = new InstallRepo(db);
  const identity = start ? await ensureIdentity(install, cipher, clock) : await loadIdentity(install, cipher);
  if (identity === null) throw new Error('this install has not started yet');
  const { tokens, printOnce } = await settleMachineTokens(config, install, { create: start });

  const {
    ledger,
    checkpoints,
    verify: verifyLedger,
    lastVerify,
    window: ledgerWindow,
    witnesses: ledgerWitnesses,
    close: closeLedger,
  } = mount(await createLedgerArea({ db, work, identity, clock, dataDir: config.dataDir, log, witnesses: config.ledgerWitnesses, start }));
  // A pack reading a capability nothing loaded offers is broken (capabilities.ts).
  const plugins = withDeclaredReads(await loadPlugins({ dirs: pluginDirs(config), log }));
  // The packs' causes: the estate checks services' check_settings against them, the investigation runs them.
  const causes = new CauseCatalogue(plugins);
  for (const b of start ? plugins.broken : []) {
    // A broken plugin is reported, never fatal: not even when the report cannot be written.
    await ledger
      .append({ type: 'system.plugin_broken', actor: 'system', reason: clip(b.problem, 4000), data: { dir: b.dir, name: b.name, version: b.version } })
      .catch((err: unknown) => log.error({ err, plugin: { dir: b.dir } }, 'could not record a broken plugin in the ledger'));
  }

  // Below the estate, what it reads: the held alerts, the licence in force, the episodes' openings.
  const held = createHeldStore(db);
  const licences = await createLicences({ db, install, identity, ledger, clock, log, config });
  const findings = createFindings(db);
  const paths = createActionPaths(db);
  const studies = createStudyStore(db);
  // The leases of work one host process does at a time: polling, connector checks, the study, the digest e-mail.
  const leases = new LeaseRepo(db);
  const episodeStore = createEpisodeStore(db);
  const people = createPeople(db);
  // Single sign-on's settings and the console address, read by notifications, status and sign-in.
  const sso = createSsoStore({ settings, cipher, publicUrl: config.publicUrl });
  const onCall = createOnCall({ db, settings, clock, consoleAddress: sso.consoleAddress });
  const { mail, carried: carriedMail } = mount(createMailArea({ settings, cipher, ledger, clock, log, config, people: people.directory, onCall }));
  const { policy } = mount(await createPolicyArea({ settings, ledger, clock, log, configDir: config.configDir, start }));
  const { connectors } = mount(createConnectorsArea({ db, cipher, plugins, ledger, clock, log, config }));
  const discovery = mount(createDiscoveryArea({ db, work, connectors, ledger, clock, log, timeoutS: config.discoverTimeoutS }));
  // Governance's approvals, below the estate: a change that lowers a tier (or changes who approves
  // a tier-1/2 service) opens a request in the estate's transaction and is applied on approval.
  const approvals = createApprovals({ db, ledger, clock });
  const estate = mount(
    await createEstateArea({
      db,
      settings,
      log,
      ledger,
      clock,
      config,
      people: people.directory,
      licences: licences.licences,
      connectors,
      held: held.alerts,
      discovery: discovery.discovery,
      episodes: episodeStore.openings,
      causeSettings: (id) => causes.get(id)?.defaults ?? null,
      start,
      changes: {
        list: async () => (await approvals.openChanges()).map((r) => ({ id: r.id, change: r.proposed_change as ProposedChange })),
        pending: (trx, service) => approvals.lockOpenChange(trx, service),
        open: async (trx, record, ask) => {
          const r = await approvals.openChange(trx, record, {
            service: ask.change.service,
            summary: ask.summary,
            change: ask.change,
            shown: ask.change.fields,
            asker: ask.asker,
          });
          return { id: r.id, expires_at: new Date(r.expires_ms).toISOString() };
        },
        onApproved: (fn) =>
          approvals.onApproved('estate_change', (trx, record, r, decider) => fn(trx, record, r.proposed_change as ProposedChange, r, decider)),
      },
    }),
  );
  // On the estate: intake places alerts with its resolver, the licence limits count its added services.
  const intake = mount(createIntakeArea({ db, settings, store: held, plugins, ledger, clock, resolver: estate.estate }));
  const licence = mount(createLicenceArea({ db, licences, held: held.alerts, counted: estate.estate, ledger, clock, log }));
  const { modes } = mount(createStatusArea({ identity, install, licence, people: people.directory, ledger, checkpoints, mail, sso: sso.settings }));
  const identityArea = mount(
    createIdentityArea({
      db,
      work,
      people,
      settings,
      install,
      tokens,
      cipher,
      modes,
      mail,
      ledger,
      clock,
      log,
      config,
      localSignIn: () => sso.localSignIn(),
      consoleAddress: sso.consoleAddress,
    }),
  );
  const { signIn, refusals, sessions } = identityArea;
  const guard = new Guard({ tokens, mode: () => modes.current(), clock, sessions });
  const episodes = mount(
    createEpisodesArea({
      store: episodeStore,
      held: intake.held,
      intake: intake.intake,
      notifier: onCall.notifier,
      findings,
      actions: { pathOf: (id) => paths.get(id) },
      ledger,
      clock,
      log,
      debounceS: config.debounceS,
      storms: { estate: estate.estate, limits: { perSource: config.stormPerSource, perService: config.stormPerService } },
    }),
  );
  const governance = mount(
    await createGovernance({
      db,
      settings,
      log,
      ledger,
      clock,
      policy,
      known: licence.limits,
      coverage: estate,
      facts: estate.facts,
      studies: studies.reports,
      configDir: config.configDir,
      approvals,
      raiseMail: { people: people.directory, mail, consoleAddress: sso.consoleAddress },
      start,
    }),
  );
  const investigation = mount(
    createInvestigationArea({
      findings,
      plugins,
      episodes: episodes.investigated,
      estate: estate.estate,
      levels: governance.autonomy,
      connectors,
      notifier: onCall.notifier,
      actions: {
        // Acting (built below) closes the approval a replaced path waited on, in this transaction.
        request: (trx, record, episodeId, run, service, nowMs) => acting.acting.request(trx, record, episodeId, run, service, nowMs),
        nudge: () => acting.acting.nudge(),
      },
      ledger,
      clock: leaseClock,
      log,
      catalogue: causes,
      ...(opts.investigationLimits === undefined ? {} : { limits: opts.investigationLimits }),
    }),
  );
  const acting: ActingArea = mount(
    createActingArea({
      paths,
      findings,
      episodes: episodes.acted,
      estate: estate.estate,
      people: people.directory,
      governance,
      policy,
      connectors: actionConnectors(connectors),
      verifier: investigation.investigations,
      notifier: onCall.notifier,
      normaliserOf: (source) => intake.normaliserOf(source),
      ledger,
      clock: leaseClock,
      log,
      consoleAddress: sso.consoleAddress,
    }),
  );
  const study = mount(
    createStudyArea({
      leases,
      store: studies,
      causes: () => investigation.catalogue.causes,
      estate: estate.estate,
      connectors,
      ledger,
      checkAll: (causes, inputs, source) => investigation.investigations.checkAll(causes, inputs, source),
      investigationsRunning: async () => (await investigation.investigations.running(1)).length,
      clock: leaseClock,
      log,
      ...(opts.studyWait === undefined ? {} : { wait: opts.studyWait }),
    }),
  );
  const { delivery: notifications } = mount(
    createNotifyArea({ onCall, episodes: episodes.outcomes, mail, connectors, people: people.directory, ledger, clock: leaseClock, log }),
  );
  const { poller, connectorChecks } = createScheduleArea({
    leases,
    connectors,
    intake: intake.intake,
    operating: async () => (await modes.current()) === 'operating',
    clock: leaseClock,
    log,
  });
  const ssoArea = mount(
    createSsoArea({
      db,
      store: sso,
      settings,
      identity: identityArea,
      people: people.directory,
      cipher,
      leases,
      holder: poller.holder,
      ledger,
      clock,
      log,
      config,
    }),
  );
  // The keychain: each part it carries through the area that owns it (docs/keychain.md).
  const { keychain } = mount(
    createKeychainArea({
      db,
      cipher,
      identity,
      licences: licence.licences,
      parts: {
        connectors: connectors.carried,
        policy: { export: (trx) => policy.exportCarried(trx), apply: (trx, record, data, actor) => policy.applyCarried(trx, record, data, actor) },
        access_policy: {
          export: (trx) => identityArea.access.exportCarried(trx),
          apply: (trx, record, data, actor) => identityArea.access.applyCarried(trx, record, data, actor),
        },
        mail: carriedMail,
        sso: ssoArea.carried,
        estate_overrides: estate.carried.overrides,
        packs_settings: estate.carried.packs,
      },
      limits: identityArea.limits,
      consoleAddress: () => sso.consoleAddress.get(),
      ledger,
      clock,
      log,
      config,
    }),
  );
  const { ticks } = mount(
    createLiveArea({
      clock,
      debounceS: config.debounceS,
      tickMs: TICK_MS,
      held: intake.held,
      episodes,
      governance,
      discovery,
      poller,
      investigations: investigation.investigations,
      study,
      leases: () => leases.live(leaseClock.now().getTime()),
    }),
  );
  const digest = mount(
    createDigestArea({
      sources: {
        episodes: episodeStore.figures,
        findings,
        approvals: governance.approvals,
        alerts: intake.held,
        ledger: ledgerWindow,
        connectors,
        // The study area's latest report is wired here once it exists (issue 16, the study).
        study: studies.reports,
      },
      verify: () => verifyLedger(),
      head: () => ledger.head(),
      checkpoint: () => checkpoints.latestSigned(),
      settings,
      people: people.directory,
      mail,
      leases,
      holder: poller.holder,
      ledger,
      clock: leaseClock,
      log,
      config,
    }),
  );
  mount(
    createDoctorArea({
      db,
      config,
      install,
      clock,
      plugins,
      verify: verifyLedger,
      connectors,
      mail,
      licence,
      ticks,
      notifications,
      autonomy: governance.file,
      digest: digest.mailer,
      keychain,
      witnesses: ledgerWitnesses,
      leases: () => leases.live(leaseClock.now().getTime()),
    }),
  );
  const services = {
    config,
    clock,
    log,
    db,
    identity,
    tokens,
    ledger,
    checkpoints,
    licences: licence.licences,
    modes,
    plugins,
    connectors,
    mail,
    intake: intake.intake,
    episodes: episodes.episodes,
    investigation,
    acting,
    study,
    signIn,
    governance,
    discovery: discovery.discovery,
    estate,
    licenceCheck: licence.confirmation,
    serviceLimits: licence.limits,
    poller,
    notifications,
    connectorChecks,
    digest,
    sso: ssoArea,
    keychain,
    verifyLedger,
  };
  const stopWorkers = () => [
    poller.stop(),
    digest.mailer.stop(),
    connectorChecks.idle(),
    episodes.episodes.stop(),
    investigation.investigations.stop(),
    acting.acting.stop(),
    notifications.stop(),
  ];
  if (!start) {
    // Stopped before they ever run: what a command does in the CLI's process nudges no pass.
    await Promise.all(stopWorkers());
    return { ...services, close: () => closeLedger() };
  }

  // GET /metrics: each figure read at scrape time through the owning area (docs/operations.md).
  mount(
    await createMetricsArea({
      token: config.metricsToken,
      clock,
      sources: {
        readiness: () => readiness.check(),
        ledgerHead: () => ledger.head(),
        lastCheckpoint: () => checkpoints.latest(),
        lastVerify,
        heldFiring: () => intake.held.firingCount(),
        openEpisodes: () => episodeStore.figures.openServices(),
        tierOf: async (service) => (await estate.estate.find(service))?.tier ?? null,
        investigationsRunning: () => findings.runningCount(),
        investigationsPending: () => findings.pendingCount(),
        approvalsPending: () => governance.approvals.pendingCount(),
        notificationQueue: async () => (await notifications.status()).pending,
        connectors: async () => (await connectors.list()).connectors,
        leasesHeld: () => leases.heldBy([poller.holder, study.study.holder], leaseClock.now().getTime()),
        alertsTaken: () => intake.intake.taken(),
        onEvents: (listener) => ledger.onEvents(listener),
      },
    }),
  );

  const server = createServer(log, tlsFiles);
  const tls = config.tls === null ? null : new TlsReloader({ files: config.tls, server: server.server as HttpsServer, log });
  const cap = connectionCap(config.maxConnections, openFilesLimit());
  const trusted = new ClientAddress(config.trustedProxies);
  guardConnections(
    server.server,
    { ...DEFAULT_LIMITS, max: cap.max, perClient: config.maxConnectionsPerClient },
    (peer) => trusted.trusts(peer),
    log.child({ component: 'http' }),
  );
  log.info({ max_connections: cap.max, per_client: config.maxConnectionsPerClient, descriptor_reserve: cap.reserve }, 'connection limits');
  consoleRoutes(server);
  for (const area of areas) area.routes({ server, log, guard });
  server.server.once('listening', () => {
    tls?.start();
    poller.start();
    digest.mailer.start();
  });

  /** The tick's last step: confirmation when due, limits, the mode change either may cause. */
  const licenceTick = () =>
    ticks.last(async () => {
      await licence.confirmation.tick();
      await licence.limits.tick();
      await modes.sync();
    });
  const tick = createTick(log, [
    { name: 'lease clock', run: () => leaseClock.measure().catch((err: unknown) => log.warn({ err }, "could not read the database's clock")) },
    { name: 'checkpoint', run: () => checkpoints.maybeWrite() },
    { name: 'witness', run: () => checkpoints.witnessLatest() },
    { name: 'mode', run: () => modes.sync() },
    { name: 'stale alerts', run: () => intake.intake.releaseStale() },
    { name: 'heartbeats', run: () => intake.intake.checkHeartbeats() },
    { name: 'grouping', run: () => episodes.episodes.process() },
    // Checks may take minutes; a pass resumes investigations a stopped host left.
    { name: 'investigations', run: () => investigation.investigations.nudge() },
    // Paths whose step is due (a verification's wait, an approval decided) move on.
    { name: 'acting', run: () => acting.acting.nudge() },
    // A study whose host stopped (its lease ran out) is failed, "the host restarted".
    { name: 'study', run: () => study.study.reap() },
    { name: 'notifications', run: () => notifications.run() },
    // A day's digest whose sender stopped mid-way is sent by whichever host's tick comes next.
    { name: 'digest', run: () => digest.mailer.resume().catch((err: unknown) => log.error({ err }, 'resuming the daily digest failed')) },
    { name: 'intake prune', run: () => intake.prune() },
    { name: 'sign-in prune', run: () => signIn.prune() },
    { name: 'refusals', run: () => refusals.recordDue() },
    // Starts a directory sync when due (under a lease) and the provider's rechecks in the background.
    { name: 'sso', run: () => ssoArea.tick() },
    { name: 'governance', run: () => governance.tick() },
    { name: 'licence', run: () => licenceTick() },
    // A slow connector must not hold up the tick.
    { name: 'connector checks', run: () => connectorChecks.tick(), background: true },
    // A member's poll of its home (every 30 s), a home's notices after a take-over.
    { name: 'keychain', run: () => keychain.tick(), background: true },
  ]);

  await modes.sync();

  let timer: NodeJS.Timeout | null = null;
  const shutdown = createShutdown({
    server,
    log,
    readiness,
    stopTicking: () => {
      if (timer !== null) clearInterval(timer);
    },
    tls,
    stopWorkers,
    // A running study ends at once as failed, "the host restarted".
    beforeWorkers: () => study.study.close(),
    idle: [async () => governance.raiseMail?.idle(), () => signIn.idle(), () => ssoArea.idle(), () => keychain.idle()],
    releases: [
      ['investigations', (every) => investigation.investigations.release(every)],
      ['action paths', (every) => acting.acting.release(every)],
      ['notifications', (every) => notifications.release(every)],
      ['leases', (every) => leases.releaseAll(every ? null : [poller.holder, study.study.holder])],
    ],
    closeLedger: async () => {
      await checkpoints.idle();
      await closeLedger();
    },
    closeDb: () => db.destroy(),
    releasePidFile,
  });

  // On SQLite this is the only process serving (the pid file): every lease and claim in the
  // database is a dead process's, this host's before a crash. Given back now, so the work is
  // taken again at once instead of after its lease.
  if (dialect(db) === 'sqlite' && !besideAnother) await shutdown.releaseAll(true);

  return {
    ...services,
    guard,
    readiness,
    tls,
    server,
    adminTokenToPrint: printOnce,
    tick,
    listen: (port = config.port, host = config.host) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          if (opts.manualTick !== true) {
            timer = setInterval(() => tick().catch((err: unknown) => log.error({ err }, 'tick failed')), TICK_MS);
            timer.unref();
          }
          resolve(server.address().port);
        });
      }),
    close: (closeOpts: CloseOptions = {}) => shutdown.close(closeOpts),
  };
}
