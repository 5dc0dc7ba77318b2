import type { CheckContext, RateWindow } from '../../contract.ts';
import { durationSeconds } from './promql.ts';

/** The shortest window a rate is read over: with a 15 s scrape interval, four samples. */
const MIN_WINDOW_S = 60;

/** The range selectors (`[1m]`, `[5m:30s]`) of a PromQL expression, in seconds. */
function rangesOf(expression: string): number[] {
  const out: number[] = [];
  for (const m of expression.matchAll(/\[\s*([0-9a-z]+)\s*(?::[^\]]*)?\]/g)) {
    const s = durationSeconds(m[1]!);
    if (s !== null) out.push(s);
  }
  return out;
}

/**
 * The window a check of `metric` reads, so that it does not dilute what the alert saw: never
 * longer than the cause's setting; no longer than the shortest range of an alert's own
 * expression that reads the same metric (the rule looked at `[1m]` of errors: so does the check);
 * else, when the alerts say when their condition began, no longer than the time since then (at
 * least a minute), so a fault that began at the alert's start fills the window. See docs/packs.md.
 */
export function alertWindow(ctx: CheckContext, metric: string, setting: { text: string; s: number }): RateWindow {
  const own = ctx.signals
    .filter((s) => s.expression !== null && s.expression.includes(metric))
    .flatMap((s) => rangesOf(s.expression!))
    .filter((s) => s > 0);
  if (own.length > 0) {
    const shortest = Math.min(...own);
    if (shortest < setting.s) return { text: `${shortest}s`, s: shortest, why: `the alert's own expression reads ${shortest} s of ${metric}` };
    return { ...setting, why: `the cause's window (the alert's own reads ${shortest} s)` };
  }
  const at = Date.parse(ctx.at);
  const starts = ctx.signals
    .filter((s) => s.status === 'firing' && s.starts_at !== null)
    .map((s) => Date.parse(s.starts_at!))
    .filter((t) => !Number.isNaN(t) && t <= at);
  if (starts.length > 0) {
    const since = Math.max(MIN_WINDOW_S, Math.ceil((at - Math.max(...starts)) / 1000));
    if (since < setting.s) return { text: `${since}s`, s: since, why: `the time since the alert began (${new Date(Math.max(...starts)).toISOString()})` };
  }
  return { ...setting, why: "the cause's window" };
}
