import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { PluginRegistry } from '../plugins/loader.ts';
import type { Db } from '../storage/db.ts';
import { FiringsRepo } from './firings.repo.ts';
import { IntakeHeldAlerts, type HeldAlerts } from './held-alerts.ts';
import { HeldRepo } from './held.repo.ts';
import { intakeRoutes } from './intake.routes.ts';
import { IntakeService } from './intake.service.ts';
import { Normalisers } from './normalise.ts';
import type { ServiceResolver } from './placement.ts';

export interface IntakeArea extends Area {
  readonly intake: IntakeService;
  /** What other areas may read or mark of the held alerts. */
  readonly held: HeldAlerts;
  /** The tick's share: forgets firings older than the baseline reads. */
  prune(): Promise<number>;
}

/** Alert intake; owns `held_alerts` and `alert_firings`. */
export function createIntakeArea(d: { db: Db; plugins: PluginRegistry; ledger: Ledger; clock: Clock; resolver?: ServiceResolver }): IntakeArea {
  const held = new HeldRepo(d.db);
  const firings = new FiringsRepo(d.db);
  const intake = new IntakeService({ normalisers: new Normalisers(d.plugins.loaded), held, firings, ledger: d.ledger, clock: d.clock, resolver: d.resolver });
  return {
    intake,
    held: new IntakeHeldAlerts({ held, firings }),
    prune: () => firings.prune(d.clock.now().getTime()),
    routes: ({ server, log, guard }: Http) => intakeRoutes(server, { log, guard, intake }),
  };
}
