/**
 * Small readings of an episode's action path for the episode page (docs/acting.md): when a step
 * was recorded (its ledger event in the timeline), how the path ended, and where it stands now.
 * Pure functions of `GET /v1/episodes/{id}`: the page holds no state of the path.
 */
import type { EpisodeDetail, LedgerEvent } from './api.ts';

/**
 * Who recorded an event a caller recorded (POST /v1/events: `data.recorded_by`, the ingest
 * token), or null for the service's own. A caller's event is never read as a step of the path.
 */
export function recordedBy(e: LedgerEvent): string | null {
  return typeof e.data.recorded_by === 'string' ? e.data.recorded_by : null;
}

/** The time of the service's last event of `type` in the episode's timeline, or null. */
export function stepAt(timeline: LedgerEvent[], type: string): string | null {
  for (let i = timeline.length - 1; i >= 0; i--) if (timeline[i]!.type === type && recordedBy(timeline[i]!) === null) return timeline[i]!.at;
  return null;
}

/**
 * How the path ended: `outcome.mitigated`, `outcome.escalated` (people are told), or
 * `outcome.not_escalated` (nobody is: a notice, or an incident that closed before anything was done).
 */
export interface PathOutcome {
  value: 'mitigated' | 'escalated' | 'not_escalated';
  reason: string;
  at: string;
  /** For an escalation: the addresses and targets told. */
  to: string[];
}

const ENDS: Record<string, PathOutcome['value']> = {
  'outcome.mitigated': 'mitigated',
  'outcome.escalated': 'escalated',
  'outcome.not_escalated': 'not_escalated',
};

/** The path's end as the service recorded it (its last of those `outcome.*` events of the episode; a caller's are not), or null. */
export function pathOutcome(timeline: LedgerEvent[]): PathOutcome | null {
  for (let i = timeline.length - 1; i >= 0; i--) {
    const e = timeline[i]!;
    const value = ENDS[e.type];
    if (value === undefined || recordedBy(e) !== null) continue;
    const to = Array.isArray(e.data.to) ? e.data.to.filter((x): x is string => typeof x === 'string') : [];
    return { value, reason: e.reason, at: e.at, to };
  }
  return null;
}

/** When the verification is due: the action's time plus the remedy's wait; null before the action. */
export function verifyDue(e: Pick<EpisodeDetail, 'actions' | 'proposal'>): string | null {
  const at = e.actions[0]?.executed_at;
  if (at === undefined || e.proposal === null) return null;
  const ms = Date.parse(at) + e.proposal.verify.after_s * 1000;
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

/**
 * One sentence saying where the path stands now, for the section's status line. "Escalated to
 * people" only once somebody was told (the episode's outcome, as the notifications set it): until
 * then it says what the episode's outcome detail says, so the two never disagree.
 */
export function standing(e: Pick<EpisodeDetail, 'path_state' | 'policy_decision' | 'actions' | 'timeline' | 'outcome' | 'outcome_detail'>): string {
  switch (e.path_state) {
    case 'pending':
      return 'Deciding what to do…';
    case 'awaiting_approval':
      return 'Waiting for approval: nothing runs until an approver approves.';
    case 'executing':
      return e.actions[0]?.executed_at === undefined ? 'The action is being taken…' : 'The action failed; people are being told.';
    case 'verifying':
      return 'The action was taken; waiting to verify that it worked.';
    case 'done': {
      const end = pathOutcome(e.timeline);
      if (end?.value === 'mitigated') return 'Done: mitigated.';
      if (end?.value === 'not_escalated') return `Done: nobody is told (${end.reason}).`;
      if (end?.value === 'escalated') {
        if (e.outcome === 'escalated') return 'Done: escalated to people.';
        if (end.to.length === 0) return 'Done: nobody could be told: no owner, approver or recipient is known.';
        return `Done: people are to be told, not yet reached (${e.outcome_detail?.reason ?? 'not delivered yet'}).`;
      }
      return 'Done.';
    }
    default:
      return '';
  }
}
