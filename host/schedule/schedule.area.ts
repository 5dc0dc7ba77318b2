import type { Clock } from '../clock.ts';
import { ConnectorChecker } from './connector-checker.ts';
import type { ConnectorService } from '../connectors/connectors.service.ts';
import type { IntakeService } from '../intake/intake.service.ts';
import type { Logger } from '../log.ts';
import type { Db } from '../storage/db.ts';
import type { Lease } from './lease.model.ts';
import { LeaseRepo } from './lease.repo.ts';
import { Poller } from './poller.ts';

export interface ScheduleArea {
  /** Polls alert-source connectors under leases. */
  readonly poller: Poller;
  /** Re-checks every connector every 5 minutes under a lease. */
  readonly connectorChecks: ConnectorChecker;
}

/** Work on a schedule shared by host processes through leases; owns `leases`. No routes. */
export function createScheduleArea(d: {
  /** The one `LeaseRepo` (built below the areas: the study and the digest take leases too). */
  leases: LeaseRepo;
  connectors: ConnectorService;
  intake: IntakeService;
  operating: () => Promise<boolean>;
  clock: Clock;
  log: Logger;
}): ScheduleArea {
  const { leases } = d;
  const poller = new Poller({ connectors: d.connectors, intake: d.intake, leases, clock: d.clock, log: d.log, operating: d.operating });
  const connectorChecks = new ConnectorChecker({ connectors: d.connectors, leases, clock: d.clock, log: d.log, holder: poller.holder });
  return { poller, connectorChecks };
}

/** The leases live at `nowMs` on a database opened outside the running service (restore refuses to run under a live host). */
export function liveLeases(db: Db, nowMs: number): Promise<Lease[]> {
  return new LeaseRepo(db).live(nowMs);
}
