import type { Level } from '../governance/levels.ts';
import type { PolicyDocument } from '../policy/policy.schema.ts';
import { freezeAt, needsApproval, safeForL2 } from '../policy/policy.service.ts';
import type { Proposal } from './proposal.ts';
import type { Scope } from './scope.ts';

/** `policy_decision` of GET /v1/episodes/{id}. */
export interface PolicyDecision {
  decision: 'act' | 'abstain';
  reason: string;
  level: Level;
  /** Whether people must approve before it runs (L1, `always_approve`, not `safe_for_l2`, irreversible). */
  approval: boolean;
  checks: Array<{ name: string; passed: boolean; detail: string }>;
}

/**
 * Step 6: act or abstain, and why: whether the action's scope is bounded to the episode's
 * service (an unbounded one is refused at every level), the service's autonomy level (`shadow` records what it would
 * have done and abstains), the halt switch, the policy's freeze windows, hourly cap,
 * `always_approve` and `safe_for_l2`, and whether the action can be rehearsed and undone (an
 * irreversible action is never taken without approval unless the policy lists its kind as safe
 * for L2). The action gate checks the same again
 * right before the action runs: this is the plan, the gate the guard.
 */
export function decide(
  p: Proposal,
  ctx: {
    level: Level;
    halted: boolean;
    policy: Pick<PolicyDocument, 'freeze_windows' | 'always_approve' | 'safe_for_l2' | 'max_actions_per_service_per_hour'>;
    ranLastHour: number;
    now: Date;
    /** Whether the action is bounded to the episode's service (host/acting/scope.ts). */
    scope: Pick<Scope, 'bounded' | 'detail'>;
  },
): PolicyDecision {
  const { level, policy } = ctx;
  const frozen = freezeAt(policy, ctx.now);
  const always = needsApproval(policy, p.action);
  const safe = safeForL2(policy, p.action);
  const checks: PolicyDecision['checks'] = [
    { name: 'scope', passed: ctx.scope.bounded, detail: ctx.scope.detail },
    { name: 'autonomy', passed: level === 'L1' || level === 'L2', detail: `${level}${level === 'shadow' ? ': records what it would do, never acts' : ''}` },
    { name: 'halt', passed: !ctx.halted, detail: ctx.halted ? 'every action is halted' : 'not halted' },
    { name: 'freeze', passed: frozen === null, detail: frozen === null ? 'no change freeze in force' : `change freeze ${frozen.name} until ${frozen.end}` },
    {
      name: 'hourly_cap',
      passed: ctx.ranLastHour < policy.max_actions_per_service_per_hour,
      detail: `${ctx.ranLastHour} of ${policy.max_actions_per_service_per_hour} actions in the last hour`,
    },
    { name: 'always_approve', passed: true, detail: always ? `${p.action} always needs approval` : `${p.action} is not listed` },
    { name: 'safe_for_l2', passed: true, detail: safe ? `${p.action} may run unasked at L2` : `${p.action} is not listed as safe for L2` },
    { name: 'reversible', passed: true, detail: p.reversible ? 'can be undone' : 'cannot be undone: approved first unless listed as safe for L2' },
    { name: 'rehearsable', passed: true, detail: p.rehearsable ? 'a dry run is asked for first (the connector may decline it)' : 'no dry run for this action' },
  ];
  // A runbook is known by its name: "would run runbook restart via runbooks".
  const what = `${p.action}${typeof p.params.name === 'string' ? ` ${p.params.name}` : ''} via ${p.connector}`;
  const abstain = (reason: string): PolicyDecision => ({ decision: 'abstain', reason, level, approval: false, checks });
  // An action wider than its alert's service is never taken, nor recorded as what would have been.
  if (!ctx.scope.bounded) return abstain(ctx.scope.detail);
  if (level === 'off' || level === 'shadow') return abstain(`${level}: would run ${what}; recorded, not done`);
  if (ctx.halted) return abstain(`halted: would run ${what}`);
  if (frozen !== null) return abstain(`a change freeze is in force (${frozen.name} until ${frozen.end}): would run ${what}`);
  if (ctx.ranLastHour >= policy.max_actions_per_service_per_hour)
    return abstain(`the hourly cap of ${policy.max_actions_per_service_per_hour} actions is reached: would run ${what}`);
  // At L2 an action runs unasked only when the policy lists its kind as safe for L2: that listing,
  // change-managed like autonomy.json, is the operator's acceptance of an irreversible kind (a
  // restart runbook). Without it, an irreversible action is always approved first.
  const approval = level === 'L1' || always || !safe;
  const why =
    level === 'L1'
      ? 'at L1 every action is approved first'
      : always
        ? 'the policy always asks'
        : !p.reversible
          ? 'it cannot be undone and is not listed as safe for L2'
          : 'not safe for L2';
  return {
    decision: 'act',
    reason: approval ? `${what}, once approved (${why})` : `${what} at L2 without asking (the policy lists ${p.action} as safe for L2)`,
    level,
    approval,
    checks,
  };
}
