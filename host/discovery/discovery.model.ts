export type JobState = 'queued' | 'running' | 'finished' | 'failed';

export type StepState = 'queued' | 'running' | 'finished' | 'failed';

/** One discovery job as stored. */
export interface JobRow {
  id: string;
  state: JobState;
  started_at: string;
  started_ms: number;
  finished_at: string | null;
  touched_ms: number;
  by: string;
  connections: number;
  found: number;
  new_candidates: number;
  failed: number;
  problem: string | null;
}

/** One connection asked by a job. */
export interface StepRow {
  job_id: string;
  connector: string;
  kind: string;
  state: StepState;
  found: number;
  dropped: number;
  problem: string | null;
  cut_off: boolean;
  took_ms: number | null;
  started_at: string | null;
  finished_at: string | null;
  names: string[];
}

/** A service name found by a connector: a candidate until a person adds it. */
export interface CandidateRow {
  name: string;
  /** The connector that found it. */
  source: string;
  kind: string;
  /** What the connector said, one item per way it found the name: `{source, ...evidence}`. */
  evidence: Array<Record<string, unknown>>;
  first_found_at: string;
  last_found_at: string;
  first_job_id: string;
  last_job_id: string;
}
