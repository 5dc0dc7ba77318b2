import type { Level } from './levels.ts';

export type ApprovalKind = 'autonomy_raise' | 'action' | 'estate_change';

/** `superseded`: an action request closed because a newer run of its episode took the action path over. */
export type ApprovalState = 'pending' | 'approved' | 'rejected' | 'expired' | 'superseded';

export type Decision = 'approve' | 'reject';

export interface ApprovalRequest {
  id: string;
  kind: ApprovalKind;
  state: ApprovalState;
  service: string;
  /** For a raise: the level when asked, and the level asked for. */
  from_level: Level | null;
  to_level: Level | null;
  /** For an action: its kind (e.g. `restart`). */
  action: string | null;
  summary: string;
  /** The person who asked (an e-mail, or the `by` given with the admin token). */
  requested_by: string;
  /** Who authenticated the request: the e-mail, or `admin-token`. */
  requested_actor: string;
  requested_at: string;
  requested_ms: number;
  expires_ms: number;
  closed_at: string | null;
  /** How many different approvers it needs; null: the default (two). */
  approvals_needed: number | null;
  /** Who may decide it (e-mails); null: any owner or admin. */
  approvers: string[] | null;
  /** The episode an action request belongs to, or null. */
  trace: string | null;
  /** For an estate change: what approving it applies (the estate's own document); null otherwise. */
  proposed_change: unknown;
}

/** A request as the digest counts it. */
export interface RequestedApproval {
  state: ApprovalState;
  requested_ms: number;
  /** When it was approved, rejected or expired; null while pending. */
  closed_ms: number | null;
}

export interface ApprovalDecision {
  request_id: string;
  decider: string;
  decision: Decision;
  note: string | null;
  at: string;
  at_ms: number;
}
