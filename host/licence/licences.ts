import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { InstallIdentity } from '../install/identity.ts';
import type { Install } from '../install/install.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { Db } from '../storage/db.ts';
import { VERSION } from '../version.ts';
import { LicenceCheck, type ConfirmationView, type ConfirmResult } from './licence-check.ts';
import { LicenceCheckRepo } from './licence-check.repo.ts';
import { LicenceRepo } from './licence.repo.ts';
import { LicenceService } from './licence.service.ts';

/** Online confirmation of the licence in force (SERVICE_LICENCE_CHECK), as the rest of the host sees it. */
export interface LicenceConfirmation {
  view(): Promise<ConfirmationView>;
  /** The tick's share: asks the licence server when a confirmation is due. */
  tick(): Promise<ConfirmResult | null>;
}

/**
 * The licence area's lower half, built before the estate that reads the licence in force (its
 * tier limits added services): the licence service (`licences`) and its online confirmation
 * (`licence_check`). The licence area, built on the estate, takes it whole and adds the limits.
 */
export interface Licences {
  readonly licences: LicenceService;
  readonly confirmation: LicenceConfirmation;
}

/**
 * The confirmation is built first and handed to the licence service (it may downgrade a status),
 * and is told the licence in force when it is asked: no cycle.
 */
export async function createLicences(d: {
  db: Db;
  install: Pick<Install, 'lock' | 'markTrialRedeemed'>;
  identity: InstallIdentity;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  config: Config;
}): Promise<Licences> {
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
  return {
    licences,
    confirmation: {
      view: async () => check.view(await licences.inForce()),
      tick: async () => check.tick(await licences.inForce()),
    },
  };
}
