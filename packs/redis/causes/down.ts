import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { REDIS } from '../applies.ts';

const ID = 'redis/down';

/**
 * `redis/down`: the exporter runs but cannot reach its Redis (`redis_up == 0`), at the check's
 * moment. One query, the evidence. An exporter that cannot be scraped at all is
 * `prometheus/target-down`'s. See README.md.
 */
export const down: CauseDefinition = {
  id: ID,
  title: 'Redis down',
  specificity: 70,
  applies: REDIS,
  reads: ['metrics'],
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { describedAll, evidenceOf, listed, num, overAll, place, samplesObserved, seriesName } = ctx.lib.prometheus;
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const where = describedAll(placed.placement);
    const r = await ctx.metrics.query(overAll(placed.placement, (s) => `redis_up{${s}}`));
    if (r.samples.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no redis_up series for ${where}: link the targets of its prometheus-redis-exporter`,
      };
    const off = r.samples.filter((s) => num(s.value) === 0);
    const all = r.samples.length;
    const evidence = [
      evidenceOf(
        r,
        'metric',
        samplesObserved(off.length > 0 ? off : r.samples, { instances: all, down: off.length }),
        off.length > 0
          ? `The exporter cannot reach ${off.length} of ${all} Redis (redis_up = 0): ${listed(off.map((s) => seriesName(s.metric)))}.`
          : `${all === 1 ? 'The one Redis answers' : `All ${all} Redis answer`} the exporter (redis_up = 1).`,
      ),
    ];
    if (off.length > 0)
      return {
        verdict: 'holds',
        reason: `${off.length} of ${all} Redis of ${where} cannot be reached by its exporter (redis_up = 0): ${listed(off.map((s) => seriesName(s.metric)))}`,
        evidence,
        subjects: off.map((s) => s.metric.instance ?? seriesName(s.metric)),
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    return {
      verdict: 'ruled_out',
      reason: `${all === 1 ? 'the one Redis' : `all ${all} Redis`} of ${where} ${all === 1 ? 'answers its exporter' : 'answer their exporters'} (redis_up = 1)`,
      evidence,
    };
  },
};
