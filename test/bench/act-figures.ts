/** `bench:act`'s figures: percentiles of a list of times, and where an episode's time goes. */
import type { EpisodeSteps } from './act-watch.ts';

/** A list of times (ms) summed up; percentiles by nearest rank (p99 of 100 is the 99th). */
export interface Figures {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

function rank(sorted: number[], p: number): number {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** null for an empty list. */
export function figures(xs: number[]): Figures | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return {
    n: s.length,
    p50: rank(s, 50),
    p90: rank(s, 90),
    p99: rank(s, 99),
    max: s[s.length - 1]!,
    mean: Math.round(s.reduce((a, b) => a + b, 0) / s.length),
  };
}

/** A step's median and p99, ms; null when no episode has it. */
export type Step = { p50: number; p99: number } | null;

const step = (xs: Array<number | null>): Step => {
  const known = xs.filter((x): x is number => x !== null && Number.isFinite(x)).sort((a, b) => a - b);
  return known.length === 0 ? null : { p50: rank(known, 50), p99: rank(known, 99) };
};
const gap = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : b - a);

/**
 * The median and p99 of each step of the executed episodes, ms: arrival → opening (less the
 * debounce), → diagnosis (retrieval and every applicable cause's check), → policy decision
 * (proposal and decision), → rehearsal (the dry run), → executed (the gate and the runbook call).
 */
export function stages(eps: EpisodeSteps[], debounceMs: number): Record<string, Step> {
  return {
    'arrival→opened': step(eps.map((e) => e.opened_ms - e.arrived_ms - debounceMs)),
    'opened→diagnosed': step(eps.map((e) => gap(e.opened_ms, e.diagnosed_ms))),
    'diagnosed→policy': step(eps.map((e) => gap(e.diagnosed_ms, e.policy_ms))),
    'policy→rehearsed': step(eps.map((e) => gap(e.policy_ms, e.rehearsed_ms))),
    'rehearsed→executed': step(eps.map((e) => gap(e.rehearsed_ms, e.executed_ms))),
  };
}
