import type { CheckContext, Placed, Placement } from '../../contract.ts';
import { promMatchers, quote } from './promql.ts';

/** The most workload links read per check: each is one query (or two) per cause. */
export const MAX_SELECTORS = 5;

/**
 * Which series belong to the service. First the estate's `workload` links carrying a label
 * matcher list in `match` (each turned into a PromQL selector, queried on its own). With none,
 * the service's name: `job="<name>"` when a scrape target has that job, else `service="<name>"`
 * when one has that label (one probe: `up{job="<name>"} or up{service="<name>"}`). An episode
 * with no service, or a name no target carries, cannot be placed.
 */
export async function place(ctx: CheckContext): Promise<Placed> {
  const skipped: string[] = [];
  const selectors: string[] = [];
  for (const link of ctx.service.links) {
    if (link.kind !== 'workload') continue;
    if (link.match === undefined) {
      skipped.push(`the workload link ${link.name ?? '(unnamed)'} names no label matchers`);
      continue;
    }
    const m = promMatchers(link.match);
    if (!m.ok) skipped.push(`the workload link ${link.match} cannot be used: ${m.problem}`);
    else if (!selectors.includes(m.selector)) selectors.push(m.selector);
  }
  if (selectors.length > 0) return { ok: true, placement: { selectors: selectors.slice(0, MAX_SELECTORS), how: 'workload', skipped } };

  const name = ctx.service.name;
  const noLinks = skipped.length === 0 ? `the estate links no workload to ${name}` : `no workload link of ${name} can be used (${skipped.join('; ')})`;
  if (name === '' || name === 'unknown')
    return { ok: false, obstacle: "it can't be placed", reason: 'the episode is not placed on a service, so no series can be chosen for it' };
  const probe = `up{job=${quote(name)}} or up{service=${quote(name)}}`;
  const r = await ctx.metrics.query(probe);
  if (r.samples.some((s) => s.metric.job === name)) return { ok: true, placement: { selectors: [`job=${quote(name)}`], how: 'job', skipped } };
  if (r.samples.some((s) => s.metric.service === name)) return { ok: true, placement: { selectors: [`service=${quote(name)}`], how: 'service', skipped } };
  return {
    ok: false,
    obstacle: "it can't be placed",
    reason: `${noLinks}, and Prometheus (${r.source}) has no target with job=${quote(name)} or service=${quote(name)} (${probe} is empty): add a workload link with the label matchers of its series`,
  };
}

/** Where the selector came from, for a reason: `job="orders" (the estate's workload link)`. */
export function described(p: Placement, selector: string): string {
  if (p.how === 'workload') return `{${selector}} (a workload link of the service)`;
  if (p.skipped.length === 0) return `{${selector}} (no workload link: found by the service's name)`;
  return `{${selector}} (found by the service's name, as ${p.skipped.join('; ')})`;
}

/**
 * One PromQL expression over every selector of the placement: each selector's expression joined
 * with `or`, which keeps one series per label set, so a target that two workload links select
 * (`job=` and `service=`) is counted once. One selector: its expression alone.
 */
export function overAll(p: Placement, expr: (selector: string) => string): string {
  return p.selectors.length === 1 ? expr(p.selectors[0]!) : p.selectors.map((s) => `(${expr(s)})`).join(' or ');
}

/** The placement's selectors for a reason: `{job="orders"} (a workload link of the service)`, several joined. */
export function describedAll(p: Placement): string {
  if (p.selectors.length === 1) return described(p, p.selectors[0]!);
  return `${p.selectors.map((s) => `{${s}}`).join(' or ')} (the workload links of the service)`;
}
