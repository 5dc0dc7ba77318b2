import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { HeldAlerts } from '../intake/held-alerts.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { Db } from '../storage/db.ts';
import { ServiceLimits, type CountedServices } from './licence-limits.ts';
import { LicenceLimitsRepo } from './licence-limits.repo.ts';
import { licenceRoutes } from './licence.routes.ts';
import type { LicenceService } from './licence.service.ts';
import type { LicenceConfirmation, Licences } from './licences.ts';

export interface LicenceArea extends Area {
  readonly licences: LicenceService;
  readonly confirmation: LicenceConfirmation;
  /** Tier limits on services (services named by alerts against the licence's number). */
  readonly limits: ServiceLimits;
}

/**
 * The licence, its online confirmation and its limits; owns `licences`, `licence_check` and
 * `licence_limit_reports`. The licence service and its confirmation come built (`createLicences`,
 * below the estate, which reads the licence in force); the limits count `counted` (the estate's
 * added services).
 */
export function createLicenceArea(d: {
  db: Db;
  licences: Licences;
  held: Pick<HeldAlerts, 'servicesByFirstSeen'>;
  /** The services that count: the estate's added services. */
  counted: CountedServices;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
}): LicenceArea {
  const { licences, confirmation } = d.licences;
  const limits = new ServiceLimits({
    repo: new LicenceLimitsRepo(d.db),
    held: d.held,
    licences,
    ledger: d.ledger,
    clock: d.clock,
    log: d.log,
    counted: d.counted,
  });
  return {
    licences,
    limits,
    confirmation,
    routes: ({ server, log, guard }: Http) => licenceRoutes(server, { log, guard, licences }),
  };
}
