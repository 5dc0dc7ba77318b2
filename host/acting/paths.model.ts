/** Where an episode's action path stands. */
export type PathState = 'pending' | 'awaiting_approval' | 'executing' | 'verifying' | 'done';

/** One episode's action path as stored: what each step decided (JSON documents, null until reached). */
export interface ActionPath {
  episode_id: string;
  run: number;
  service: string;
  state: PathState;
  due_ms: number;
  proposal: Record<string, unknown> | null;
  policy_decision: Record<string, unknown> | null;
  rehearsal: Record<string, unknown> | null;
  approval_id: string | null;
  approvals: Array<Record<string, unknown>> | null;
  action: Record<string, unknown> | null;
  verification: Record<string, unknown> | null;
  outcome: 'mitigated' | 'escalated' | null;
  /** When the halt switch held its fix back (the path is proposed again once the halt is released), else null. */
  held_by_halt: string | null;
  updated_at: string;
}

/** Whether a later run may replace the path: it has not acted, nor begun to. */
export function replaceable(p: { state: string; action: unknown }): boolean {
  return p.action === null && p.state !== 'executing' && p.state !== 'verifying';
}
