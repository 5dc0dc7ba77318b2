import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';

const ID = 'prometheus/error-rate';

/**
 * `prometheus/error-rate`: the share of 5xx answers among the service's requests is above the
 * threshold and above what it was in the same window a week before (times `week_factor`).
 * Counters in the style of `http_requests_total{code="503"}`; the metric and the status label
 * are settings. The window is the setting's, cut to what the alert itself looked at
 * (ctx.lib.prometheus.alertWindow), so a one-minute burst the alert saw is not diluted over five. A week with no
 * data (Prometheus keeps less, or the service is newer) leaves the threshold alone to decide, and
 * the reason says so.
 */
export const errorRate: CauseDefinition = {
  id: ID,
  title: 'Error rate above normal',
  specificity: 30,
  applies: { always: true },
  reads: ['metrics'],
  settings: { threshold: 0.05, window: '5m', week_factor: 1.5, metric: 'http_requests_total', status_label: 'code' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { alertWindow, describedAll, evidenceOf, num, overAll, percent, place, rounded } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const threshold = set.number('threshold', 0, 1);
    const factor = set.number('week_factor', 0);
    const setting = set.duration('window');
    const metric = set.name('metric');
    const status = set.name('status_label');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;
    const where = describedAll(p);
    const window = alertWindow(ctx, metric, setting);

    const rate = (offset: string, errors: boolean) => overAll(p, (s) => `rate(${metric}{${s}${errors ? `,${status}=~"5.."` : ''}}[${window.text}]${offset})`);
    const share = (offset: string) => `(sum(${rate(offset, true)}) or vector(0)) / sum(${rate(offset, false)})`;
    const now = await ctx.metrics.query(share(''));
    const v = now.samples.length === 0 ? null : num(now.samples[0]!.value);
    if (v === null)
      return { verdict: 'unknown', obstacle: "the data isn't there", reason: `the 5xx share cannot be computed: no ${metric} series for ${where}` };
    if (Number.isNaN(v))
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `the 5xx share cannot be computed: no requests for ${where} in the last ${window.text}`,
      };
    const before = await ctx.metrics.query(share(' offset 1w'));
    const b = before.samples.length === 0 ? null : num(before.samples[0]!.value);
    const week = b === null || Number.isNaN(b) ? null : b;
    const evidence = [
      evidenceOf(
        now,
        'metric',
        { share: rounded(v), threshold, window: window.text },
        `5xx share of ${metric} over ${window.text} (${window.why}): ${percent(v)} (threshold ${percent(threshold)}).`,
      ),
      evidenceOf(
        before,
        'baseline',
        { share_week_before: week === null ? null : rounded(week), week_factor: factor },
        week === null
          ? `A week before, same window: no data (Prometheus keeps less than a week of it, or the service is newer).`
          : `A week before, same window: ${percent(week)}.`,
      ),
    ];
    const weekText = week === null ? 'no data a week before to compare with' : `${percent(week)} a week before`;
    if (v > threshold && (week === null || v > week * factor))
      return {
        verdict: 'holds',
        reason: `the 5xx share of ${metric} for ${where} over ${window.text} is ${percent(v)} (threshold ${percent(threshold)}; ${weekText})`,
        evidence,
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, setting.s + 60) },
      };
    return {
      verdict: 'ruled_out',
      reason:
        v > threshold
          ? `the 5xx share of ${metric} for ${where} over ${window.text} is ${percent(v)}: above the threshold ${percent(threshold)} but not above ${factor} × the ${percent(week!)} of a week before`
          : `the 5xx share of ${metric} for ${where} over ${window.text} is ${percent(v)}, not above the threshold ${percent(threshold)} (${weekText})`,
      evidence,
    };
  },
};
