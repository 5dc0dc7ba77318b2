import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { MYSQL } from '../applies.ts';

const ID = 'mysql/down';

/**
 * `mysql/down`: the exporter runs but cannot reach its MySQL (`mysql_up == 0`), at the
 * check's moment. An exporter that cannot be scraped at all is `prometheus/target-down`'s.
 */
export const down: CauseDefinition = {
  id: ID,
  title: 'MySQL down',
  specificity: 70,
  applies: MYSQL,
  reads: ['metrics'],
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { describedAll, evidenceOf, listed, num, overAll, place, samplesObserved, seriesName } = ctx.lib.prometheus;
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const where = describedAll(placed.placement);
    const r = await ctx.metrics.query(overAll(placed.placement, (s) => `mysql_up{${s}}`));
    if (r.samples.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no mysql_up series for ${where}: link the targets of its prometheus-mysqld-exporter`,
      };
    const off = r.samples.filter((s) => num(s.value) === 0);
    const all = r.samples.length;
    const names = listed(off.map((s) => seriesName(s.metric)));
    const evidence = [
      evidenceOf(
        r,
        'metric',
        samplesObserved(off.length > 0 ? off : r.samples, { servers: all, down: off.length }),
        off.length > 0
          ? `The exporter cannot reach ${off.length} of ${all} MySQL (mysql_up = 0): ${names}.`
          : `${all === 1 ? 'The one MySQL answers' : `All ${all} MySQL answer`} the exporter (mysql_up = 1).`,
      ),
    ];
    if (off.length > 0)
      return {
        verdict: 'holds',
        reason: `${off.length} of ${all} MySQL of ${where} cannot be reached by its exporter (mysql_up = 0): ${names}`,
        evidence,
        subjects: off.map((s) => s.metric.instance ?? seriesName(s.metric)),
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    return {
      verdict: 'ruled_out',
      reason: `${all === 1 ? 'the one MySQL' : `all ${all} MySQL`} of ${where} ${all === 1 ? 'answers its exporter' : 'answer their exporters'} (mysql_up = 1)`,
      evidence,
    };
  },
};
