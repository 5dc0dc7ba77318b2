import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { ConnectorService } from '../connectors/connectors.service.ts';
import type { Install } from '../install/install.ts';
import type { VerifyOptions, VerifyReport } from '../ledger/verify.ts';
import type { LicenceArea } from '../licence/licence.area.ts';
import type { TickMonitor } from '../live/tick-monitor.ts';
import { NO_PROVIDER, type MailService } from '../mail/mail.service.ts';
import type { NotifyDelivery } from '../notify/delivery.service.ts';
import type { PluginRegistry } from '../plugins/loader.ts';
import type { AutonomyFileService } from '../governance/autonomy-file.service.ts';
import type { DigestMailer } from '../digest/digest-mail.ts';
import { AppError } from '../errors.ts';
import type { KeychainService } from '../keychain/keychain.service.ts';
import type { Lease } from '../schedule/lease.model.ts';
import type { Db } from '../storage/db.ts';
import { doctorRoutes } from './doctor.routes.ts';
import { doctorDeps, runDoctor, type DoctorExtras } from './doctor.service.ts';

/** GET /v1/doctor: the same checks as `oncall doctor`, judged as the running service, with what only the service knows. */
export function createDoctorArea(d: {
  db: Db;
  config: Config;
  install: Pick<Install, 'get'>;
  clock: Clock;
  plugins: PluginRegistry;
  verify: (opts?: VerifyOptions) => Promise<VerifyReport>;
  connectors: Pick<ConnectorService, 'list'>;
  mail: Pick<MailService, 'breakGlass'>;
  licence: LicenceArea;
  ticks: Pick<TickMonitor, 'seen'>;
  notifications: Pick<NotifyDelivery, 'status'>;
  autonomy: Pick<AutonomyFileService, 'status'>;
  digest: Pick<DigestMailer, 'status'>;
  keychain: Pick<KeychainService, 'view'>;
  witnesses: () => Array<{ target: string; delivered_seq: number | null; failing: boolean }>;
  leases: () => Promise<Lease[]>;
}): Area {
  const { mail, licence } = d;
  const extras: DoctorExtras = {
    connectors: () => d.connectors.list(),
    mail: () => mail.breakGlass(),
    licence: async () => ({
      status: await licence.licences.status(),
      confirmation: await licence.confirmation.view(),
      usage: await licence.limits.usage(),
      overLimit: await licence.limits.overLimit(),
    }),
    schedules: async () => d.ticks.seen(),
    notifications: async () => {
      const glass = await mail.breakGlass();
      return { ...(await d.notifications.status()), mailProblem: glass.open && glass.reason === NO_PROVIDER ? NO_PROVIDER : null };
    },
    autonomy: () => d.autonomy.status(),
    digest: () => d.digest.status(),
    // A licence without a keychain answers 403 licence_tier: for doctor that is "no keychain".
    witness: async () => d.witnesses(),
    leases: () => d.leases(),
    keychain: () => d.keychain.view().catch((e: unknown) => (e instanceof AppError && e.code === 'licence_tier' ? null : Promise.reject(e))),
  };
  const run = () =>
    runDoctor(
      doctorDeps({
        db: d.db,
        config: d.config,
        installs: d.install,
        clock: d.clock,
        plugins: async () => d.plugins,
        verifyLedger: d.verify,
        extras,
        judge: 'service',
      }),
    );
  return { routes: ({ server, log, guard }: Http) => doctorRoutes(server, { log, guard, clock: d.clock, run }) };
}
