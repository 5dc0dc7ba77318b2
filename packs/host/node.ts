/**
 * What every cause of the `host` pack does first and last: its settings checked, the service's
 * node_exporter series placed (ctx.lib.prometheus.place: the estate's workload links, such as
 * `job="node", instance="db-1:9100"`), the answer when a collector's series are missing, and
 * series named and listed for people. Only computes; every read is the cause's own.
 */
import type { CheckAnswer, CheckContext, MetricSample, Placement } from '../../host/plugins/contract.ts';

/** The placement and its selectors in words, or the unknown answer the cause gives instead. */
export type NodePlaced = { ok: true; p: Placement; where: string } | { ok: false; answer: CheckAnswer };

/**
 * Places the service's series once the settings are known to be usable: `problem` is the
 * settings' problem (the lib's `SettingsReader.problem()` or a pack check), null when none.
 */
export async function placeNode(ctx: CheckContext, problem: string | null): Promise<NodePlaced> {
  if (problem !== null) return { ok: false, answer: { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: problem } };
  const placed = await ctx.lib.prometheus.place(ctx);
  if (!placed.ok) return { ok: false, answer: { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason } };
  return { ok: true, p: placed.placement, where: ctx.lib.prometheus.describedAll(placed.placement) };
}

/** The answer when the service's selectors have no series of `metric`: which node_exporter collector exports it. */
export function missing(metric: string, collector: string, where: string): CheckAnswer {
  return {
    verdict: 'unknown',
    obstacle: "the data isn't there",
    reason: `no ${metric} series for ${where}: link the service's node_exporter targets as workloads, with its ${collector} collector on`,
  };
}

/** A series for a sentence: its instance, then the values of `keys` (`10.0.0.5:9100:/srv`, `db-1:9100:sda`). */
export function named(metric: Record<string, string>, keys: string[] = []): string {
  return [metric.instance ?? metric.job ?? '?', ...keys.map((k) => metric[k] ?? '?')].join(':');
}

/**
 * Samples as `observed` keeps them: at most MAX_SERIES, the riskiest first (`order`), each with
 * its labels and value under `key`; with the total and how many are at risk. NaN values (no
 * traffic in a window) are kept, last.
 */
export function listedSamples(
  ctx: CheckContext,
  samples: MetricSample[],
  key: string,
  atRisk: (v: number) => boolean,
  order: 'lowest' | 'highest',
  extra: Record<string, unknown>,
): Record<string, unknown> {
  const { MAX_SERIES, labelsOf, num, rounded } = ctx.lib.prometheus;
  const rank = (v: number) => (Number.isNaN(v) ? Infinity : order === 'lowest' ? v : -v);
  const sorted = [...samples].sort((a, b) => rank(num(a.value)) - rank(num(b.value)));
  return {
    ...extra,
    series: sorted.slice(0, MAX_SERIES).map((s) => ({ labels: labelsOf(s.metric), [key]: rounded(num(s.value)) })),
    total: samples.length,
    at_risk: samples.filter((s) => atRisk(num(s.value))).length,
  };
}

/** Why a setting that must be a regular expression (RE2, as PromQL's `=~`) cannot be one, or null. */
export function regexProblem(ctx: CheckContext, name: string, allowEmpty = false): string | null {
  const v = ctx.settings[name];
  if (typeof v !== 'string' || (!allowEmpty && v === ''))
    return `the cause's settings cannot be used: setting ${name} must be a regular expression, not ${JSON.stringify(v)}`;
  try {
    new RegExp(v);
    return null;
  } catch {
    return `the cause's settings cannot be used: setting ${name} is not a regular expression: ${ctx.lib.prometheus.quote(v)}`;
  }
}

/** The seconds from `lookback` before the episode opened to the check's moment, as a PromQL range (`[960s]`), and its start. */
export function sinceOpening(ctx: CheckContext, lookbackS: number): { range: string; since: string } {
  const at = Date.parse(ctx.at);
  const since = Date.parse(ctx.episode.opened_at) - lookbackS * 1000;
  return { range: `${Math.max(1, Math.ceil((at - since) / 1000))}s`, since: new Date(since).toISOString() };
}
