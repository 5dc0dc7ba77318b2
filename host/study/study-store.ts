import type { Db } from '../storage/db.ts';
import { StudyRepo } from './study.repo.ts';
import type { StudyReport } from './study-report.ts';

export type { StudyReport } from './study-report.ts';

/** The latest finished study's report, for the areas that read it (governance's readiness, the digest). */
export interface StudyReports {
  /** The report of the last finished study, or null when no study has finished. */
  latest(): Promise<StudyReport | null>;
}

export interface StudyStore {
  readonly repo: StudyRepo;
  readonly reports: StudyReports;
}

/**
 * The study's store, built below governance (its readiness reads the latest report) and handed
 * to the study area, which alone writes it.
 */
export function createStudyStore(db: Db): StudyStore {
  const repo = new StudyRepo(db);
  return { repo, reports: { latest: async () => (await repo.lastFinished())?.report ?? null } };
}
