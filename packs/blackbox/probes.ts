/**
 * Which blackbox exporter probes are the service's: the series its workload links select
 * (ctx.lib.prometheus.place: `job="blackbox-tls", instance="https://orders.bank.example/"`, or a
 * `service` label the probe's target carries), and the probe of its health URL: the blackbox
 * exporter's scrape configs make the probed address the `instance` label, so
 * `instance="<health_url>"` selects it without a link. Only computes; the one read (`place`'s
 * probe of the service's name) is the cause's own.
 */
import type { CheckAnswer, CheckContext, Placement } from '../../host/plugins/contract.ts';

/** The most selectors read: the placement's five and the health URL. */
const MAX_SELECTORS = 6;

export type ProbesPlaced = { ok: true; p: Placement; where: string } | { ok: false; answer: CheckAnswer };

/** The service's probes as one placement (selectors joined with `or` by `overAll`), and where they came from in words. */
export async function placeProbes(ctx: CheckContext, problem: string | null = null): Promise<ProbesPlaced> {
  if (problem !== null) return { ok: false, answer: { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: problem } };
  const { describedAll, place, quote } = ctx.lib.prometheus;
  const placed = await place(ctx);
  const url = ctx.service.health_url?.trim() ?? '';
  const byUrl = url === '' ? null : `instance=${quote(url)}`;
  if (!placed.ok && byUrl === null)
    return {
      ok: false,
      answer: { verdict: 'unknown', obstacle: placed.obstacle, reason: `${placed.reason}; nor does the estate give it a health URL to find its probes by` },
    };
  const selectors = [
    ...(placed.ok ? placed.placement.selectors : []),
    ...(byUrl === null || (placed.ok && placed.placement.selectors.includes(byUrl)) ? [] : [byUrl]),
  ];
  const p: Placement = {
    selectors: selectors.slice(0, MAX_SELECTORS),
    how: placed.ok ? placed.placement.how : 'workload',
    skipped: placed.ok ? placed.placement.skipped : [],
  };
  const where = [
    ...(placed.ok ? [describedAll(placed.placement)] : []),
    ...(byUrl === null || !p.selectors.includes(byUrl) ? [] : [`{${byUrl}} (the probe of its health URL)`]),
  ].join(' or ');
  return { ok: true, p, where };
}

/** A probe for a sentence: what it probed (its `instance`), and its job when that is not the usual `blackbox`. */
export function probeName(metric: Record<string, string>): string {
  const target = metric.instance ?? '?';
  return metric.job === undefined || metric.job === 'blackbox' ? target : `${target} (job ${metric.job})`;
}

/** The answer when the service has no probe that reads what the cause needs. */
export function noProbe(what: string, where: string, how: string): CheckAnswer {
  return { verdict: 'unknown', obstacle: "the data isn't there", reason: `no blackbox exporter probe ${what} for ${where}: ${how}` };
}
