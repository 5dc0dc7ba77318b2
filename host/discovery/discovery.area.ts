import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { ConnectorService } from '../connectors/connectors.service.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { Db } from '../storage/db.ts';
import type { UnitOfWork } from '../storage/unit-of-work.ts';
import { discoveryRoutes } from './discovery.routes.ts';
import { DiscoveryService } from './discovery.service.ts';
import { JobsRepo } from './jobs.repo.ts';

/** A running discovery job as the live view shows it. */
export interface RunningJob {
  id: string;
  kind: 'discovery';
  started_at: string;
  progress: { state: string; connections: number; found: number; failed: number };
}

export interface DiscoveryArea extends Area {
  readonly discovery: DiscoveryService;
  /** The job running now (none or one), for the live view. */
  running(): Promise<RunningJob[]>;
}

/** Discovery jobs and their candidates; owns `discovery_jobs`, `discovery_steps` and `service_candidates`. */
export function createDiscoveryArea(d: {
  db: Db;
  work: UnitOfWork;
  connectors: ConnectorService;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  timeoutS: number;
}): DiscoveryArea {
  const repo = new JobsRepo(d.db);
  const discovery = new DiscoveryService({ repo, work: d.work, connectors: d.connectors, ledger: d.ledger, clock: d.clock, log: d.log, timeoutS: d.timeoutS });
  return {
    discovery,
    running: async () => {
      const job = await repo.running();
      return job === null
        ? []
        : [
            {
              id: job.id,
              kind: 'discovery',
              started_at: job.started_at,
              progress: { state: job.state, connections: job.connections, found: job.found, failed: job.failed },
            },
          ];
    },
    routes: ({ server, log, guard }: Http) => discoveryRoutes(server, { log, guard, discovery }),
  };
}
