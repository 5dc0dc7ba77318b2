import type { Db } from '../storage/db.ts';
import { EpisodeRepo } from './episode.repo.ts';
import type { OpenedEpisode } from './episode.model.ts';
import { StormRepo } from './storm.repo.ts';

/**
 * The episodes area's lower half, built before the estate that reads it: the episodes' tables
 * (`episodes` and its members) and the openings the estate's co-firing suggestions read. The
 * episodes area, built on intake (itself on the estate), takes it whole and alone writes it:
 * `repo` is for the episodes area only.
 */
export interface EpisodeStore {
  readonly repo: EpisodeRepo;
  /** The services storm episodes hold (`storm_services`); the episodes area's only. */
  readonly storms: StormRepo;
  /** Episodes opened since a time, per service. */
  readonly openings: { openedSince(sinceMs: number): Promise<Array<{ service: string; t_open_ms: number }>> };
  /** What the digest counts: episodes opened and closed in a window. */
  readonly figures: EpisodeFigures;
}

/** Episodes opened and closed in a time window (the digest reads these). */
export interface EpisodeFigures {
  openedBetween(fromMs: number, toMs: number): Promise<OpenedEpisode[]>;
  closedBetween(fromMs: number, toMs: number): Promise<Array<{ service: string; count: number }>>;
  /** The services with an open episode now (GET /metrics). */
  openServices(): Promise<string[]>;
}

export function createEpisodeStore(db: Db): EpisodeStore {
  const repo = new EpisodeRepo(db);
  return {
    repo,
    storms: new StormRepo(db),
    openings: { openedSince: (sinceMs) => repo.openedSince(sinceMs) },
    figures: {
      openedBetween: (from, to) => repo.openedBetween(from, to),
      closedBetween: (from, to) => repo.closedBetween(from, to),
      openServices: () => repo.openServices(),
    },
  };
}
