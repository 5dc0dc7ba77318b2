import type { Evidence } from './evidence.ts';

/** The diagnosis of an episode, as `GET /v1/episodes/{id}` answers it. */
export interface Diagnosis {
  /** Cause ids that hold, best first. */
  holds: string[];
  /** Cause ids that could not be answered. */
  unknown: string[];
  /** One or two sentences a person reads first. */
  summary: string;
  /** The moment the run read (absent in diagnoses recorded before it was kept). */
  at?: string;
  /** What that moment is: the episode's `opening`, or the `newest_signal`'s arrival for a re-run. */
  moment?: string;
}

/** A verdict as an episode carries it. */
export interface StoredVerdict {
  cause: string;
  title: string;
  verdict: 'holds' | 'ruled_out' | 'unknown';
  reason: string;
  obstacle: string | null;
  evidence: string[];
  took_ms: number;
  remedy: unknown;
  verification: unknown;
}

/** An evidence item as an episode carries it. */
export type StoredEvidence = Evidence & { id: string; cause: string };

export type InvestigationState = 'pending' | 'running' | 'diagnosed' | 'skipped';

/** What an episode shows of its investigation. */
export interface Findings {
  state: InvestigationState;
  run: number;
  started_at: string | null;
  finished_at: string | null;
  note: string | null;
  diagnosis: Diagnosis | null;
  verdicts: StoredVerdict[];
  evidence: StoredEvidence[];
}
