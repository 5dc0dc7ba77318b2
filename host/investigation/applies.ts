import { matches, parseMatchers, type Matcher } from '../matchers.ts';
import type { CauseApplies, CheckService, CheckSignal } from '../plugins/contract.ts';

/** A cause's applicability made ready to test many episodes (matchers parsed once). */
export interface Applicability {
  always: boolean;
  alerts: string[];
  labels: Matcher[][];
  technologies: Set<string>;
}

/** Parses a cause's `applies` (already checked at load, so every matcher list parses). */
export function applicability(a: CauseApplies): Applicability {
  return {
    always: a.always === true,
    alerts: a.alerts ?? [],
    labels: (a.labels ?? []).flatMap((l) => {
      const m = parseMatchers(l);
      return m.ok ? [m.matchers] : [];
    }),
    technologies: new Set((a.technologies ?? []).map((t) => t.toLowerCase())),
  };
}

const nameMatches = (pattern: string, name: string): boolean => (pattern.endsWith('*') ? name.startsWith(pattern.slice(0, -1)) : name === pattern);

/** Whether the cause applies to an episode of `service` with these signals: any condition is enough. */
export function applies(a: Applicability, signals: readonly Pick<CheckSignal, 'name' | 'labels'>[], service: Pick<CheckService, 'technologies'>): boolean {
  if (a.always) return true;
  if (a.alerts.length > 0 && signals.some((s) => a.alerts.some((p) => nameMatches(p, s.name)))) return true;
  if (a.labels.length > 0 && signals.some((s) => a.labels.some((m) => matches(m, s.labels)))) return true;
  return service.technologies.some((t) => a.technologies.has(t.toLowerCase()));
}
