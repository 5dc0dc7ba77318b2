import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';

const ID = 'prometheus/latency';

/**
 * `prometheus/latency`: the service's p99 request latency, from a Prometheus histogram
 * (`<histogram>_bucket` series with `le`), is above the threshold. The histogram's name is a
 * setting (default `http_request_duration_seconds`); buckets of all the service's series (its
 * selectors joined with `or`) are summed by `le` before the quantile. The window is the
 * setting's, cut to what the alert itself looked at (ctx.lib.prometheus.alertWindow).
 */
export const latency: CauseDefinition = {
  id: ID,
  title: 'Latency above threshold (p99)',
  specificity: 25,
  applies: { always: true },
  reads: ['metrics'],
  settings: { p99_seconds: 1, window: '5m', histogram: 'http_request_duration_seconds' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { alertWindow, describedAll, evidenceOf, num, overAll, place, rounded, seconds } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const limit = set.number('p99_seconds', 0);
    const setting = set.duration('window');
    const histogram = set.name('histogram');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;
    const where = describedAll(p);
    const window = alertWindow(ctx, histogram, setting);

    const r = await ctx.metrics.query(`histogram_quantile(0.99, sum by (le) (${overAll(p, (s) => `rate(${histogram}_bucket{${s}}[${window.text}])`)}))`);
    const v = r.samples.length === 0 ? null : num(r.samples[0]!.value);
    if (v === null)
      return { verdict: 'unknown', obstacle: "the data isn't there", reason: `the p99 latency cannot be computed: no ${histogram}_bucket series for ${where}` };
    if (Number.isNaN(v))
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `the p99 latency cannot be computed: no requests observed for ${where} in the last ${window.text}`,
      };
    const evidence = [
      evidenceOf(
        r,
        'metric',
        { p99_seconds: rounded(v), threshold_seconds: limit, window: window.text },
        `p99 of ${histogram} over ${window.text} (${window.why}): ${seconds(v)} (threshold ${seconds(limit)}).`,
      ),
    ];
    if (v > limit)
      return {
        verdict: 'holds',
        reason: `the p99 latency of ${where} over ${window.text} is ${seconds(v)}, above ${seconds(limit)}`,
        evidence,
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, setting.s + 60) },
      };
    return { verdict: 'ruled_out', reason: `the p99 latency of ${where} over ${window.text} is ${seconds(v)}, not above ${seconds(limit)}`, evidence };
  },
};
