import type { Db } from '../storage/db.ts';
import { FiringsRepo } from './firings.repo.ts';
import { IntakeHeldAlerts, type HeldAlerts } from './held-alerts.ts';
import { HeldRepo } from './held.repo.ts';

/**
 * The intake area's lower half, built before the estate that reads it: the held alerts and
 * their firings (`held_alerts`, `alert_firings`), and what other areas may read or mark of them
 * (`alerts`: the estate's unplaced alerts and services named, the episodes' grouping, the
 * licence limits' services, the live view). The intake area, built on the estate, takes it
 * whole and alone writes it: `held` and `firings` are for the intake area only.
 */
export interface HeldStore {
  readonly held: HeldRepo;
  readonly firings: FiringsRepo;
  readonly alerts: HeldAlerts;
}

export function createHeldStore(db: Db): HeldStore {
  const held = new HeldRepo(db);
  const firings = new FiringsRepo(db);
  return { held, firings, alerts: new IntakeHeldAlerts({ held, firings }) };
}
