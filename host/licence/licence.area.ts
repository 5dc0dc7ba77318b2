import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { HeldAlerts } from '../intake/held-alerts.ts';
import type { InstallIdentity } from '../install/identity.ts';
import type { Install } from '../install/install.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { Db } from '../storage/db.ts';
import { VERSION } from '../version.ts';
import { LicenceCheck, type ConfirmationView, type ConfirmResult } from './licence-check.ts';
import { LicenceCheckRepo } from './licence-check.repo.ts';
import { ServiceLimits, type CountedServices } from './licence-limits.ts';
import { LicenceLimitsRepo } from './licence-limits.repo.ts';
import { LicenceRepo } from './licence.repo.ts';
import { licenceRoutes } from './licence.routes.ts';
import { LicenceService } from './licence.service.ts';

/** Online confirmation of the licence in force (SERVICE_LICENCE_CHECK), as the rest of the host sees it. */
export interface LicenceConfirmation {
  view(): Promise<ConfirmationView>;
  /** The tick's share: asks the licence server when a confirmation is due. */
  tick(): Promise<ConfirmResult | null>;
}

export interface LicenceArea extends Area {
  readonly licences: LicenceService;
  readonly confirmation: LicenceConfirmation;
  /** Tier limits on services (services named by alerts against the licence's number). */
  readonly limits: ServiceLimits;
}

/**
 * The licence, its online confirmation and its limits; owns `licences`, `licence_check` and
 * `licence_limit_reports`. The confirmation is built first and handed to the licence service (it
 * may downgrade a status), and is told the licence in force when it is asked: no cycle.
 */
export async function createLicenceArea(d: {
  db: Db;
  install: Pick<Install, 'lock' | 'markTrialRedeemed'>;
  identity: InstallIdentity;
  held: Pick<HeldAlerts, 'servicesByFirstSeen'>;
  counted?: CountedServices;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  config: Config;
}): Promise<LicenceArea> {
  const { db, ledger, clock, log, config } = d;
  const check = new LicenceCheck({
    repo: new LicenceCheckRepo(db),
    ledger,
    clock,
    log: log.child({ component: 'licence-check' }),
    mode: config.licenceCheck,
    server: config.licenceServer,
    fingerprint: d.identity.fingerprint,
    version: VERSION,
  });
  await check.load();
  const licences = new LicenceService({
    repo: new LicenceRepo(db),
    install: d.install,
    identity: d.identity,
    ledger,
    clock,
    opts: { configDir: config.configDir, extraPublicKey: config.licencePublicKey },
    confirmation: check.hook,
  });
  const limits = new ServiceLimits({ repo: new LicenceLimitsRepo(db), held: d.held, licences, ledger, clock, log, counted: d.counted });
  return {
    licences,
    limits,
    confirmation: {
      view: async () => check.view(await licences.inForce()),
      tick: async () => check.tick(await licences.inForce()),
    },
    routes: ({ server, log, guard }: Http) => licenceRoutes(server, { log, guard, licences }),
  };
}
