import type { Trx } from '../storage/db.ts';
import type { Episode, OutcomeDetail } from './episode.model.ts';

/** What the notify area may do to an episode: lock it and set its outcome (only episodes touch `episodes`). */
export interface EpisodeOutcomes {
  /** The episode locked on MySQL for the rest of `trx`, or null. */
  lock(trx: Trx, id: string): Promise<Episode | null>;
  /** Sets the outcome and how it came about. */
  setOutcome(trx: Trx, id: string, outcome: string, detail: OutcomeDetail): Promise<void>;
}
