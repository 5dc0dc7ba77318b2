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

/** How the path ended: `outcome.mitigated` or `outcome.escalated`, with why and who was told. */
export interface PathOutcome {
  value: 'mitigated' | 'escalated';
  reason: string;
  at: string;
  /** For an escalation: the addresses and targets told. */
  to: string[];
}

/** The path's end as the service recorded it (its last `outcome.*` event of the episode), or null. */
export function pathOutcome(timeline: LedgerEvent[]): PathOutcome | null {
  for (let i = timeline.length - 1; i >= 0; i--) {
    const e = timeline[i]!;
    if ((e.type !== 'outcome.mitigated' && e.type !== 'outcome.escalated') || recordedBy(e) !== null) continue;
    const to = Array.isArray(e.data.to) ? e.data.to.filter((x): x is string => typeof x === 'string') : [];
    return { value: e.type === 'outcome.mitigated' ? 'mitigated' : 'escalated', reason: e.reason, at: e.at, to };
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

/** One sentence saying where the path stands now, for the section's status line. */
export function standing(e: Pick<EpisodeDetail, 'path_state' | 'policy_decision' | 'actions' | 'timeline'>): string {
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
      if (end?.value === 'escalated') return 'Done: escalated to people.';
      return 'Done.';
    }
    default:
      return '';
  }
}
