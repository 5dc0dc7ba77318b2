import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import type { Db } from '../storage/db.ts';
import { schemaState } from '../storage/migrate.ts';
import { healthRoutes } from './health.routes.ts';
import { ProbeRepo } from './probe.repo.ts';
import { Readiness } from './readiness.service.ts';

export interface HealthArea extends Area {
  /** GET /health/ready's answer; the shutdown sequence flips `markShuttingDown()` first. */
  readonly readiness: Readiness;
}

/** Readiness (GET /health/ready); owns `storage_probe`. Liveness (GET /health) stays with status. */
export function createHealthArea(d: { db: Db; dataDir: string; clock: Clock; log: Logger }): HealthArea {
  const readiness = new Readiness({ probe: new ProbeRepo(d.db), schema: () => schemaState(d.db), dataDir: d.dataDir, clock: d.clock, log: d.log });
  return { readiness, routes: ({ server, log }: Http) => healthRoutes(server, { log, readiness }) };
}
