import type { ServiceView } from '../estate/estate.model.ts';
import type { StoredVerdict } from '../investigation/findings.model.ts';
import type { ActionDeclaration } from '../plugins/contract.ts';

/** The remedy proposed for an episode (`proposal` of GET /v1/episodes/{id}). */
export interface Proposal {
  action: string;
  connector: string;
  params: Record<string, unknown>;
  why: string;
  undo: string;
  /**
   * How success is checked: re-run `cause` and expect `expect` (`by: check`, the default), or, when
   * nothing can be re-checked (a revert of a change whose symptoms no check found), the
   * episode's alerts all clearing after the action (`by: alerts`).
   */
  verify: { cause: string; expect: 'ruled_out' | 'holds'; after_s: number; by?: 'check' | 'alerts' };
  cause: string;
  rehearsable: boolean;
  reversible: boolean;
}

/** A configured connector that performs an action kind. */
export interface Performer {
  name: string;
  /** The connector's kind (`alertmanager`, `git`, ...). */
  kind: string;
  declaration: ActionDeclaration;
  fault: string | null;
}

/** Default wait before verification, seconds (a remedy's `after_s` overrides it). */
export const DEFAULT_VERIFY_AFTER_S = 120;

/**
 * Step 5: the remedy of the best cause that holds and names one, with its connector and
 * parameters, or why there is none. The connector is the one the remedy names, else for a
 * `runbook` the service's runbook link of that name, else a connector the estate links to the
 * service that performs the kind, else the only one configured.
 */
export function propose(
  verdicts: StoredVerdict[],
  service: ServiceView | null,
  performersOf: (kind: string) => Performer[],
): { ok: true; proposal: Proposal } | { ok: false; why: string } {
  const holding = verdicts.filter((v) => v.verdict === 'holds');
  if (holding.length === 0) return { ok: false, why: 'no cause holds: there is nothing to remedy' };
  const withRemedy = holding.filter((v) => remedyOf(v) !== null);
  if (withRemedy.length === 0) return { ok: false, why: `the causes that hold (${holding.map((v) => v.cause).join(', ')}) name no remedy` };
  const top = withRemedy[0]!;
  const remedy = remedyOf(top)!;
  const params: Record<string, unknown> = { ...remedy.params };
  let named = typeof params.connector === 'string' ? params.connector : null;
  delete params.connector;
  if (remedy.action === 'runbook' && named === null) {
    const link = service?.links.find((l) => l.kind === 'runbook' && l.name === params.name && l.connector !== undefined);
    if (link === undefined)
      return { ok: false, why: `${top.cause} proposes the runbook ${String(params.name)}, but the estate links no such runbook to the service` };
    named = link.connector!;
    if (link.path !== undefined && params.path === undefined) params.path = link.path;
  }
  const performers = performersOf(remedy.action).filter((p) => p.fault === null);
  const linked = new Set((service?.links ?? []).map((l) => l.connector).filter((c): c is string => c !== undefined));
  const chosen =
    named !== null
      ? performers.find((p) => p.name === named)
      : (performers.find((p) => linked.has(p.name)) ?? (performers.length === 1 ? performers[0] : undefined));
  if (chosen === undefined) {
    const why =
      named !== null
        ? `connector ${named} cannot perform ${remedy.action} (not configured, broken, or its kind declares no such action)`
        : performers.length === 0
          ? `no configured connector performs ${remedy.action}`
          : `${performers.length} connectors perform ${remedy.action} and the estate links none of them to the service`;
    return { ok: false, why };
  }
  const verification = verificationOf(top, holding);
  return {
    ok: true,
    proposal: {
      action: remedy.action,
      connector: chosen.name,
      params,
      why: `${top.title}: ${top.reason}`,
      undo:
        remedy.undo ??
        (chosen.declaration.reversible ? `undo the ${remedy.action} through ${chosen.name}` : `${remedy.action} cannot be undone by the service`),
      verify: verification,
      cause: top.cause,
      rehearsable: chosen.declaration.rehearsable,
      reversible: chosen.declaration.reversible,
    },
  };
}

function remedyOf(v: StoredVerdict): { action: string; params: Record<string, unknown>; undo?: string } | null {
  const r = v.remedy as { action?: unknown; params?: unknown; undo?: unknown } | null;
  if (r === null || typeof r !== 'object' || typeof r.action !== 'string') return null;
  const params = typeof r.params === 'object' && r.params !== null ? (r.params as Record<string, unknown>) : {};
  return { action: r.action, params, ...(typeof r.undo === 'string' ? { undo: r.undo } : {}) };
}

/**
 * How the remedy of `v` is verified: the verification it names; else, when it names none (a
 * change, which stays in the past whatever is done), the next cause that held beside it (the
 * symptom it caused) must be ruled out; else, with no symptom a check found, the episode's alerts
 * must all clear after the action.
 */
function verificationOf(v: StoredVerdict, holding: StoredVerdict[]): Proposal['verify'] {
  const x = v.verification as { cause?: unknown; expect?: unknown; after_s?: unknown } | null;
  const after = typeof x?.after_s === 'number' ? x.after_s : DEFAULT_VERIFY_AFTER_S;
  if (x !== null && typeof x === 'object' && typeof x.cause === 'string' && (x.expect === 'ruled_out' || x.expect === 'holds'))
    return { cause: x.cause, expect: x.expect, after_s: after, by: 'check' };
  const symptom = holding.find((h) => h.cause !== v.cause);
  if (symptom !== undefined) return { cause: symptom.cause, expect: 'ruled_out', after_s: after, by: 'check' };
  return { cause: v.cause, expect: 'ruled_out', after_s: after, by: 'alerts' };
}
