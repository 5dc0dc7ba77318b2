import { MINUTE } from '../clock.ts';
import type { Trx } from '../storage/db.ts';
import type { EpisodeRepo } from './episode.repo.ts';

/**
 * What one source may open (issue 22: 2,661 pushes of unique service names in 10 s opened 2,661
 * episodes). Services the estate has always get their own episode: there is one open episode per
 * service, and people add the services. For services it does not have (and unplaced alerts), at
 * most `perSource` new episodes a minute from one source, and at most `perService` a minute for
 * one such service; beyond either, the alerts join the source's one **storm** episode, which
 * keeps holding a service's alerts while it is open.
 */
export interface StormLimits {
  perSource: number;
  perService: number;
}

/** The defaults (SERVICE_STORM_PER_SOURCE, SERVICE_STORM_PER_SERVICE): see docs/episodes.md. */
export const DEFAULT_STORM_LIMITS: StormLimits = { perSource: 20, perService: 2 };
/** The window the limits count in. */
export const STORM_WINDOW_MS = MINUTE;

/** The service name of a source's storm episode: the colon keeps it apart from every estate name. */
export const stormService = (source: string): string => `storm:${source}`;

/**
 * Which limit a new episode for `service` from `source` would pass, and why, or null when it may
 * open: `source` (every such service of the source goes to the storm) or `service` (this one).
 */
export async function limitReached(
  episodes: Pick<EpisodeRepo, 'unknownOpenedSince' | 'serviceOpenedSince'>,
  trx: Trx,
  limits: StormLimits,
  source: string,
  service: string,
  nowMs: number,
): Promise<{ limit: 'source' | 'service'; why: string } | null> {
  const since = nowMs - STORM_WINDOW_MS;
  const fromSource = await episodes.unknownOpenedSince(trx, source, since);
  if (fromSource >= limits.perSource)
    return {
      limit: 'source',
      why: `${source} opened ${fromSource} episodes in the last minute for services the estate does not have (at most ${limits.perSource})`,
    };
  const ofService = await episodes.serviceOpenedSince(trx, service, since);
  if (ofService >= limits.perService)
    return {
      limit: 'service',
      why: `${service} opened ${ofService} episodes in the last minute and the estate does not have it (at most ${limits.perService})`,
    };
  return null;
}
