import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { InvestigatedEpisodes } from '../episodes/episodes.area.ts';
import type { EpisodeNotifier } from '../episodes/episode.service.ts';
import type { Level } from '../governance/levels.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { PluginRegistry } from '../plugins/loader.ts';
import type { Db } from '../storage/db.ts';
import { CauseCatalogue } from './catalogue.ts';
import { checksNow, type CheckRun, type CheckRunRequest } from './checks-now.ts';
import { FindingsRepo } from './findings.repo.ts';
import { investigationRoutes } from './investigation.routes.ts';
import { InvestigationService, type InvestigationDeps, type InvestigationLimits } from './investigation.service.ts';
import type { ConnectorReads } from './live-readers.ts';
import type { EstateEntries } from './retrieval.ts';

/** The investigation's store, built below the episodes area (openings ask for investigations in their own transaction). */
export function createFindings(db: Db): FindingsRepo {
  return new FindingsRepo(db);
}

export interface InvestigationArea extends Area {
  readonly investigations: InvestigationService;
  readonly catalogue: CauseCatalogue;
  /** Checks run by hand (the API and `oncall checks run`). */
  checksNow(r: CheckRunRequest): Promise<CheckRun>;
}

/**
 * Investigation: the causes of the loaded packs, the worker that retrieves, checks and diagnoses
 * each episode, and checks run by hand. It reads the estate, the episodes, the connectors and
 * the autonomy levels through narrow interfaces, and tells people the diagnosis through the
 * notify area's outbox. See docs/investigation.md.
 */
export function createInvestigationArea(d: {
  findings: FindingsRepo;
  plugins: PluginRegistry;
  episodes: InvestigatedEpisodes;
  estate: EstateEntries;
  levels: { levelOf(service: string): Promise<Level> };
  connectors: ConnectorReads;
  notifier: EpisodeNotifier;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  limits?: Partial<InvestigationLimits>;
  /** Acting's store: a diagnosis asks for the episode's action path. */
  actions?: InvestigationDeps['actions'];
  /** The causes of the loaded packs, when the host built them already (the estate checks settings against them). */
  catalogue?: CauseCatalogue;
}): InvestigationArea {
  const catalogue = d.catalogue ?? new CauseCatalogue(d.plugins);
  const log = d.log.child({ component: 'investigation' });
  const investigations = new InvestigationService({
    findings: d.findings,
    episodes: d.episodes,
    estate: d.estate,
    levels: d.levels,
    catalogue,
    connectors: d.connectors,
    ledger: d.ledger,
    teller: {
      // The message carries the diagnosis's published shape: summary, holds, unknown.
      tellDiagnosis: async (trx, episode, severity, { summary, holds, unknown }) => {
        await d.notifier.tell(trx, { event: 'incident.diagnosed', episode, severity, diagnosis: { summary, holds, unknown } });
      },
      nudge: () => d.notifier.nudge(),
    },
    clock: d.clock,
    log,
    ...(d.limits === undefined ? {} : { limits: d.limits }),
    ...(d.actions === undefined ? {} : { actions: d.actions }),
  });
  d.episodes.onInvestigationsAsked(() => investigations.nudge());
  const now = (r: CheckRunRequest) =>
    checksNow({ catalogue, estate: d.estate, connectors: d.connectors, ledger: d.ledger, checkAll: (c, i, s) => investigations.checkAll(c, i, s) }, r);
  return {
    investigations,
    catalogue,
    checksNow: now,
    routes: ({ server, log: httpLog, guard }: Http) =>
      investigationRoutes(server, { log: httpLog, guard, catalogue, checksNow: now, now: () => d.clock.now() }),
  };
}
