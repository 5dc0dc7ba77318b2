import type { Cause } from '../investigation/catalogue.ts';
import type { CheckService } from '../plugins/contract.ts';
import type { VerdictResult } from '../investigation/run-check.ts';
import type { JudgedPair } from './study-report.ts';

/**
 * Whether the cause applies to the service only through an alert: no `always`, no technology of
 * the service it names; only alert names or labels bring it in (docs/study.md).
 */
export function onlyThroughAlerts(cause: Cause, service: Pick<CheckService, 'technologies'>): boolean {
  if (cause.applies.always) return false;
  return !service.technologies.some((t) => cause.applies.technologies.has(t.toLowerCase()));
}

/** A cause that reads nothing but the alert is not run: only the alert names what to look at. */
export function readsOnlyTheAlert(cause: Cause): boolean {
  return cause.reads.length === 0;
}

/** The pair of a cause that reads nothing but the alert. */
export function atTheAlert(service: string, cause: Cause): JudgedPair {
  return {
    service,
    cause: cause.id,
    verdict: 'at the alert',
    check: null,
    obstacle: null,
    reason: `${cause.title} reads nothing but the alert itself: only the alert names what to look at`,
    evidence: [],
  };
}

/**
 * The study's verdict from the check run read-only with no alert: holds or ruled out is
 * `can prove`; unknown is `at the alert` when only an alert brings the cause in, else `can't yet`
 * with the check's obstacle and reason.
 */
export function judge(service: CheckService, cause: Cause, r: VerdictResult): JudgedPair {
  const base = { service: service.name, cause: cause.id, check: r.verdict };
  if (r.verdict === 'holds' || r.verdict === 'ruled_out')
    return { ...base, verdict: 'can prove', obstacle: null, reason: r.reason, evidence: r.verdict === 'holds' ? r.evidence : [] };
  if (onlyThroughAlerts(cause, service))
    return {
      ...base,
      verdict: 'at the alert',
      obstacle: null,
      reason: `${cause.title} applies to ${service.name} only through an alert, and with no alert the check could not answer (${r.reason})`,
      evidence: [],
    };
  return { ...base, verdict: "can't yet", obstacle: r.obstacle ?? 'the read was refused or failed', reason: r.reason, evidence: [] };
}
