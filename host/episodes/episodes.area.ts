import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { HeldAlerts } from '../intake/held-alerts.ts';
import type { IntakeService } from '../intake/intake.service.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { EpisodeOutcomes } from './episode-outcomes.ts';
import type { EpisodeStore } from './episode-store.ts';
import { EpisodeReader } from './episode.reader.ts';
import type { Episode, EpisodeKind, EpisodeMember } from './episode.model.ts';
import { episodeRoutes } from './episode.routes.ts';
import { EpisodeService, type EpisodeNotifier, type InvestigationRequests } from './episode.service.ts';
import type { EpisodeActions, EpisodeFindings } from './episode.reader.ts';
import { parseQuery } from './query/parse.ts';
import type { StormLimits } from './storm.ts';
import type { ActedEpisodes } from '../acting/acting.service.ts';

/** An open episode as the live view shows it. */
export interface OpenEpisode {
  id: string;
  kind: EpisodeKind;
  service: string;
  t_open: string;
  alerts: string[];
}

export interface EpisodesArea extends Area {
  readonly episodes: EpisodeService;
  /** For the notify area: lock an episode and set its outcome. */
  readonly outcomes: EpisodeOutcomes;
  /** The most recent open episodes, for the live view. */
  open(limit: number): Promise<OpenEpisode[]>;
  /** What the investigation reads of an episode: the episode, its signals, related episodes. */
  readonly investigated: InvestigatedEpisodes;
  /** What acting reads and sets: the episode, its signals, its decision and outcome. */
  readonly acted: ActedEpisodes;
}

/** The episodes as the investigation reads them (host/investigation). */
export interface InvestigatedEpisodes {
  get(id: string): Promise<Episode | null>;
  signalsOf(id: string): Promise<EpisodeMember[]>;
  related(dependencies: string[], service: string, sinceMs: number, excludeId: string, atMs: number): Promise<{ open: Episode[]; history: Episode[] }>;
  /** Called after a grouping pass that asked for investigations committed. */
  onInvestigationsAsked(listener: () => void): void;
}

/**
 * Grouping of held alerts into episodes, and reading them; owns `episodes` and its members
 * through `store` (`createEpisodeStore`, built below the estate, which reads the openings).
 * It subscribes to intake at construction: a changed held set starts a grouping run, and an
 * ended alert is noted in its episode inside intake's transaction.
 */
export function createEpisodesArea(d: {
  store: EpisodeStore;
  held: HeldAlerts;
  intake: IntakeService;
  notifier: EpisodeNotifier;
  /** The investigation's store (below this area): openings ask for an investigation; the episode view shows its findings. */
  findings?: InvestigationRequests & EpisodeFindings;
  /** Acting's store (below this area): the episode view shows the path. */
  actions?: EpisodeActions;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  debounceS: number;
  /** The storm bound: the names of the services the estate has, and the limits. Absent: none. */
  storms?: { estate: { names(): Promise<string[]> }; limits: StormLimits };
}): EpisodesArea {
  const { ledger, clock } = d;
  const { repo, storms } = d.store;
  const episodes = new EpisodeService({
    episodes: repo,
    held: d.held,
    ledger,
    clock,
    log: d.log,
    debounceS: d.debounceS,
    notifier: d.notifier,
    ...(d.findings === undefined ? {} : { investigations: d.findings }),
    ...(d.storms === undefined ? {} : { storms: { ...d.storms, repo: storms } }),
  });
  d.intake.onChanged(() => episodes.nudge());
  d.intake.onAlertEnded((trx, episodeId, fingerprint, status, at) => repo.endAlert(trx, episodeId, fingerprint, status, at));
  const reader = new EpisodeReader({
    episodes: repo,
    ledger,
    clock,
    storms,
    ...(d.findings === undefined ? {} : { findings: d.findings }),
    ...(d.actions === undefined ? {} : { actions: d.actions }),
  });
  const openQuery = parseQuery('state:open');
  return {
    episodes,
    outcomes: repo,
    acted: {
      get: (id, trx) => repo.get(id, trx),
      worstSeverity: (trx, id) => repo.worstSeverity(trx, id),
      signalsOf: (id) => repo.alertsOf(id),
      setDecision: (trx, id, decision) => repo.setDecision(trx, id, decision),
      setOutcome: (trx, id, outcome, detail) => repo.setOutcome(trx, id, outcome, detail),
      lock: (trx, id) => repo.lock(trx, id),
    },
    investigated: {
      get: (id) => repo.get(id),
      signalsOf: (id) => repo.alertsOf(id),
      related: (deps, service, sinceMs, excludeId, atMs) => repo.related(deps, service, sinceMs, excludeId, atMs),
      onInvestigationsAsked: (l) => episodes.onInvestigationsAsked(l),
    },
    open: async (limit) =>
      (await repo.list({ limit, incidentsOnly: false, query: openQuery, after: null, nowMs: clock.now().getTime() })).episodes.map((e) => ({
        id: e.id,
        kind: e.kind,
        service: e.service,
        t_open: e.t_open,
        alerts: e.alerts,
      })),
    routes: ({ server, log, guard }: Http) => episodeRoutes(server, { log, guard, reader }),
  };
}
