/** The digest's data (GET /v1/digest, `oncall digest --json`, the daily e-mail); docs/digest.md defines each figure. */

/** The latest study's report as the study area publishes it (issue 16, the study). */
export interface StudyReport {
  finished_at: string;
  cut_short: boolean;
  /** Share of (service, cause) pairs that can be proven today, 0..1. */
  provable_share: number;
  pairs: Record<string, unknown>;
  holding_now: Array<{ service: string; cause: string; evidence: unknown }>;
  obstacles: unknown[];
  services: unknown[];
}

/** What the digest needs of the study area: its latest finished report, or null when it never ran. */
export interface StudyReports {
  latest(): Promise<StudyReport | null>;
}

export interface ServiceLine {
  service: string;
  opened: number;
  closed: number;
  mitigated: number;
  escalated: number;
}

export interface AlertLine {
  source: string;
  name: string;
  service: string | null;
  firings: number;
  alerts: number;
  last_fired: string;
}

export interface AutonomyChange {
  at: string;
  service: string;
  from: string | null;
  to: string | null;
  /** Who asked for the change (for a raise: the requester). */
  by: string;
  /** For an approved raise, the approvers who approved it; empty for a change that needed no approval. */
  approved_by: string[];
  reason: string;
}

export interface HaltLine {
  at: string;
  action: 'halted' | 'resumed';
  by: string;
  reason: string;
}

export interface LedgerStandingView {
  ok: boolean;
  /** The head that was verified (a printed digest is evidence of it). */
  head: { seq: number; hash: string };
  /** When that verification ran (docs/digest.md: it is reused for up to 10 minutes). */
  verified_at: string;
  /** What verify found wrong, or null. */
  problem: string | null;
}

export interface DigestData {
  days: number;
  from: string;
  to: string;
  episodes: {
    opened: number;
    closed: number;
    by_outcome: { mitigated: number; escalated: number };
    by_service: ServiceLine[];
  };
  times: {
    diagnosis_p50_s: number | null;
    diagnosis_p90_s: number | null;
    mitigation_p50_s: number | null;
    mitigation_p90_s: number | null;
  };
  actions: { executed: number; refused: number; failed: number; undone: number };
  approvals: { asked: number; approved: number; rejected: number; expired: number; answer_p50_s: number | null };
  /** The newest GOVERNANCE_LIMIT of each list; `*_left_out` says how many older ones of the window are not listed. */
  governance: { autonomy_changes: AutonomyChange[]; autonomy_changes_left_out: number; halts: HaltLine[]; halts_left_out: number };
  noisiest_alerts: AlertLine[];
  unplaced_alerts: Array<Omit<AlertLine, 'service'>>;
  study: { finished_at: string; provable_share: number; cut_short: boolean; holding_now: Array<{ service: string; cause: string }> } | null;
  connectors_with_problems: Array<{ name: string; kind: string; problem: string | null; last_checked_at: string | null }>;
  ledger: LedgerStandingView;
}

export type Digest = DigestData & { markdown: string };

/** The day range a digest may cover. */
export const DIGEST_MIN_DAYS = 1;
export const DIGEST_MAX_DAYS = 90;
/** How many alerts, autonomy changes and halts each list shows at most. */
export const LIST_LIMIT = 10;
export const GOVERNANCE_LIMIT = 50;
