import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Cause } from '../investigation/catalogue.ts';
import type { CheckInputs, ReaderSource } from '../investigation/context.ts';
import type { ConnectorReads, LedgerFinder } from '../investigation/live-readers.ts';
import type { EstateEntries } from '../investigation/retrieval.ts';
import type { VerdictResult } from '../investigation/run-check.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { Leases } from '../schedule/lease.model.ts';
import type { StudyStore } from './study-store.ts';
import { studyRoutes } from './study.routes.ts';
import { StudyService } from './study.service.ts';

/** The running study as the live view shows it. */
export interface RunningStudy {
  id: string;
  kind: 'study';
  started_at: string;
  progress: { state: string; done: number; total: number };
}

export interface StudyArea extends Area {
  readonly study: StudyService;
  /** The study running now (none or one), for the live view. */
  running(): Promise<RunningStudy[]>;
}

/**
 * The study (read-only rehearsal): owns `studies` and `study_verdicts` through its store (built
 * below governance, which reads the latest report), runs the investigation's checks one cause
 * at a time with no alert. See docs/study.md.
 */
export function createStudyArea(d: {
  leases: Leases;
  store: StudyStore;
  causes: () => readonly Cause[];
  estate: EstateEntries & { addedInOrder(): Promise<string[]> };
  connectors: ConnectorReads;
  ledger: Ledger & LedgerFinder;
  checkAll(causes: readonly Cause[], inputs: CheckInputs, source: ReaderSource): Promise<VerdictResult[]>;
  investigationsRunning(): Promise<number>;
  clock: Clock;
  log: Logger;
  wait?: (ms: number) => Promise<void>;
}): StudyArea {
  const study = new StudyService({
    repo: d.store.repo,
    leases: d.leases,
    causes: d.causes,
    estate: d.estate,
    connectors: d.connectors,
    ledger: d.ledger,
    checkAll: d.checkAll,
    investigationsRunning: d.investigationsRunning,
    clock: d.clock,
    log: d.log.child({ component: 'study' }),
    ...(d.wait === undefined ? {} : { wait: d.wait }),
  });
  return {
    study,
    running: async () => {
      const s = await d.store.repo.active();
      return s === null ? [] : [{ id: s.id, kind: 'study', started_at: s.started_at, progress: { state: s.state, done: s.done, total: s.total } }];
    },
    routes: ({ server, log, guard }: Http) => studyRoutes(server, { log, guard, study }),
  };
}
