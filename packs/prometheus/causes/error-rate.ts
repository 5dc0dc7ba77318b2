import type { CauseDefinition, CheckAnswer, CheckContext, EvidenceInput } from '../../../host/plugins/contract.ts';
import { described, place } from '../lib/place.ts';
import { num, percent, rounded } from '../lib/promql.ts';
import { evidenceOf, listed } from '../lib/series.ts';
import { Settings } from '../lib/settings.ts';

const ID = 'prometheus/error-rate';

/**
 * `prometheus/error-rate`: the share of 5xx answers among the service's requests is above the
 * threshold and above what it was in the same window a week before (times `week_factor`).
 * Counters in the style of `http_requests_total{code="503"}`; the metric and the status label
 * are settings. A week with no data (Prometheus keeps less, or the service is newer) leaves the
 * threshold alone to decide, and the reason says so.
 */
export const errorRate: CauseDefinition = {
  id: ID,
  title: 'Error rate above normal',
  specificity: 30,
  applies: { always: true },
  reads: ['metrics'],
  settings: { threshold: 0.05, window: '5m', week_factor: 1.5, metric: 'http_requests_total', status_label: 'code' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const set = new Settings(ctx);
    const threshold = set.number('threshold', 0, 1);
    const factor = set.number('week_factor', 0);
    const window = set.duration('window');
    const metric = set.name('metric');
    const status = set.name('status_label');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;

    const share = (sel: string, offset: string) =>
      `(sum(rate(${metric}{${sel},${status}=~"5.."}[${window.text}]${offset})) or vector(0)) / sum(rate(${metric}{${sel}}[${window.text}]${offset}))`;
    const evidence: EvidenceInput[] = [];
    const high: string[] = [];
    const normal: string[] = [];
    const missing: string[] = [];
    for (const sel of p.selectors) {
      const where = described(p, sel);
      const now = await ctx.metrics.query(share(sel, ''));
      const v = now.samples.length === 0 ? null : num(now.samples[0]!.value);
      if (v === null || Number.isNaN(v)) {
        missing.push(v === null ? `no ${metric} series for ${where}` : `no requests for ${where} in the last ${window.text}`);
        continue;
      }
      const before = await ctx.metrics.query(share(sel, ' offset 1w'));
      const b = before.samples.length === 0 ? null : num(before.samples[0]!.value);
      const week = b === null || Number.isNaN(b) ? null : b;
      evidence.push(
        evidenceOf(
          now,
          'metric',
          { share: rounded(v), threshold },
          `5xx share of ${metric} for {${sel}} over ${window.text}: ${percent(v)} (threshold ${percent(threshold)}).`,
        ),
        evidenceOf(
          before,
          'baseline',
          { share_week_before: week === null ? null : rounded(week), week_factor: factor },
          week === null
            ? `A week before, same window: no data (Prometheus keeps less than a week of it, or the service is newer).`
            : `A week before, same window: ${percent(week)}.`,
        ),
      );
      const weekText = week === null ? 'no data a week before to compare with' : `${percent(week)} a week before`;
      if (v > threshold && (week === null || v > week * factor)) high.push(`${percent(v)} for ${where} (threshold ${percent(threshold)}; ${weekText})`);
      else if (v > threshold)
        normal.push(`${percent(v)} for ${where} is above the threshold ${percent(threshold)} but not above ${factor} × the ${percent(week!)} of a week before`);
      else normal.push(`${percent(v)} for ${where} is not above the threshold ${percent(threshold)} (${weekText})`);
    }
    if (evidence.length === 0) return { verdict: 'unknown', obstacle: "the data isn't there", reason: `the 5xx share cannot be computed: ${listed(missing)}` };
    const also = missing.length > 0 ? ` (${listed(missing)})` : '';
    if (high.length > 0)
      return {
        verdict: 'holds',
        reason: `the 5xx share of ${metric} over ${window.text} is ${listed(high)}${also}`,
        evidence,
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, window.s + 60) },
      };
    return { verdict: 'ruled_out', reason: `the 5xx share of ${metric} over ${window.text}: ${listed(normal)}${also}`, evidence };
  },
};
