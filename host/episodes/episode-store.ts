import type { Db } from '../storage/db.ts';
import { EpisodeRepo } from './episode.repo.ts';

/**
 * The episodes area's lower half, built before the estate that reads it: the episodes' tables
 * (`episodes` and its members) and the openings the estate's co-firing suggestions read. The
 * episodes area, built on intake (itself on the estate), takes it whole and alone writes it:
 * `repo` is for the episodes area only.
 */
export interface EpisodeStore {
  readonly repo: EpisodeRepo;
  /** Episodes opened since a time, per service. */
  readonly openings: { openedSince(sinceMs: number): Promise<Array<{ service: string; t_open_ms: number }>> };
}

export function createEpisodeStore(db: Db): EpisodeStore {
  const repo = new EpisodeRepo(db);
  return { repo, openings: { openedSince: (sinceMs) => repo.openedSince(sinceMs) } };
}
