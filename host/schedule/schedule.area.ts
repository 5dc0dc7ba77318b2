import type { Clock } from '../clock.ts';
import { ConnectorChecker } from './connector-checker.ts';
import type { ConnectorService } from '../connectors/connectors.service.ts';
import type { IntakeService } from '../intake/intake.service.ts';
import type { Logger } from '../log.ts';
import type { Db } from '../storage/db.ts';
import { LeaseRepo } from './lease.repo.ts';
import { Poller } from './poller.ts';

export interface ScheduleArea {
  /** Polls alert-source connectors under leases. */
  readonly poller: Poller;
  /** Re-checks every connector every 5 minutes under a lease. */
  readonly connectorChecks: ConnectorChecker;
  /** The leases, for other work one host process does at a time (the daily digest). */
  readonly leases: Pick<LeaseRepo, 'get' | 'take'>;
}

/** Work on a schedule shared by host processes through leases; owns `leases`. No routes. */
export function createScheduleArea(d: {
  db: Db;
  connectors: ConnectorService;
  intake: IntakeService;
  operating: () => Promise<boolean>;
  clock: Clock;
  log: Logger;
}): ScheduleArea {
  const leases = new LeaseRepo(d.db);
  const poller = new Poller({ connectors: d.connectors, intake: d.intake, leases, clock: d.clock, log: d.log, operating: d.operating });
  const connectorChecks = new ConnectorChecker({ connectors: d.connectors, leases, clock: d.clock, log: d.log, holder: poller.holder });
  return { poller, connectorChecks, leases };
}
