import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { MYSQL } from '../applies.ts';

const ID = 'mysql/slow-queries';

/**
 * `mysql/slow-queries`: a server counted at least `min` slow queries in the window
 * (`increase(mysql_global_status_slow_queries[window])`: statements over its
 * `long_query_time`). The window is the alert's own when shorter (the pack library).
 */
export const slowQueries: CauseDefinition = {
  id: ID,
  title: 'MySQL slow queries rising',
  specificity: 50,
  applies: MYSQL,
  reads: ['metrics'],
  settings: { min: 10, window: '10m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { describedAll, evidenceOf, listed, num, overAll, place, rounded, seriesName } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const min = set.number('min', 0);
    const window = set.duration('window');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const where = describedAll(placed.placement);
    const w = ctx.lib.prometheus.alertWindow(ctx, 'mysql_global_status_slow_queries', window);
    const r = await ctx.metrics.query(overAll(placed.placement, (s) => `sum by (instance) (increase(mysql_global_status_slow_queries{${s}}[${w.text}]))`));
    if (r.samples.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no mysql_global_status_slow_queries series for ${where}: link the targets of its prometheus-mysqld-exporter`,
      };
    const rows = r.samples
      .map((s) => ({ name: seriesName(s.metric), instance: s.metric.instance ?? seriesName(s.metric), n: num(s.value) }))
      .sort((a, b) => b.n - a.n);
    const hit = rows.filter((x) => x.n >= min && x.n > 0);
    const shown = (xs: typeof rows) => listed(xs.map((x) => `${x.name}: ${Math.round(x.n)}`));
    const observed = { window: w.text, min, servers: rows.slice(0, 20).map((x) => ({ instance: x.name, slow_queries: rounded(x.n) })) };
    const evidence = [evidenceOf(r, 'metric', observed, `Slow queries in the last ${w.text} (${w.why}): ${shown(rows)}.`)];
    if (hit.length > 0)
      return {
        verdict: 'holds',
        reason: `${shown(hit)} slow queries in the last ${w.text} on ${where} (at least ${min}): statements over long_query_time`,
        evidence,
        subjects: hit.map((x) => x.instance),
        verification: { cause: ID, expect: 'ruled_out', after_s: w.s },
      };
    return {
      verdict: 'ruled_out',
      reason: `fewer than ${min} slow queries in the last ${w.text} on every server of ${where} (most: ${shown(rows.slice(0, 1))})`,
      evidence,
    };
  },
};
