import type { CauseDefinition, CheckAnswer, CheckContext, EvidenceInput } from '../../../host/plugins/contract.ts';
import { described, place } from '../lib/place.ts';
import { num, rounded, seconds } from '../lib/promql.ts';
import { evidenceOf, listed } from '../lib/series.ts';
import { Settings } from '../lib/settings.ts';

const ID = 'prometheus/latency';

/**
 * `prometheus/latency`: the service's p99 request latency, from a Prometheus histogram
 * (`<histogram>_bucket` series with `le`), is above the threshold. The histogram's name is a
 * setting (default `http_request_duration_seconds`); buckets of all the selector's series are
 * summed by `le` before the quantile.
 */
export const latency: CauseDefinition = {
  id: ID,
  title: 'Latency above threshold (p99)',
  specificity: 25,
  applies: { always: true },
  reads: ['metrics'],
  settings: { p99_seconds: 1, window: '5m', histogram: 'http_request_duration_seconds' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const set = new Settings(ctx);
    const limit = set.number('p99_seconds', 0);
    const window = set.duration('window');
    const histogram = set.name('histogram');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;

    const evidence: EvidenceInput[] = [];
    const slow: string[] = [];
    const fine: string[] = [];
    const missing: string[] = [];
    for (const sel of p.selectors) {
      const where = described(p, sel);
      const r = await ctx.metrics.query(`histogram_quantile(0.99, sum by (le) (rate(${histogram}_bucket{${sel}}[${window.text}])))`);
      const v = r.samples.length === 0 ? null : num(r.samples[0]!.value);
      if (v === null || Number.isNaN(v)) {
        missing.push(v === null ? `no ${histogram}_bucket series for ${where}` : `no requests observed for ${where} in the last ${window.text}`);
        continue;
      }
      evidence.push(
        evidenceOf(
          r,
          'metric',
          { p99_seconds: rounded(v), threshold_seconds: limit },
          `p99 of ${histogram} for {${sel}} over ${window.text}: ${seconds(v)} (threshold ${seconds(limit)}).`,
        ),
      );
      (v > limit ? slow : fine).push(`${seconds(v)} for ${where}`);
    }
    if (evidence.length === 0)
      return { verdict: 'unknown', obstacle: "the data isn't there", reason: `the p99 latency cannot be computed: ${listed(missing)}` };
    const also = missing.length > 0 ? ` (${listed(missing)})` : '';
    if (slow.length > 0)
      return {
        verdict: 'holds',
        reason: `the p99 latency over ${window.text} is above ${seconds(limit)}: ${listed(slow)}${also}`,
        evidence,
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, window.s + 60) },
      };
    return { verdict: 'ruled_out', reason: `the p99 latency over ${window.text} is not above ${seconds(limit)}: ${listed(fine)}${also}`, evidence };
  },
};
