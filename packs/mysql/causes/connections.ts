import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { MYSQL } from '../applies.ts';

const ID = 'mysql/connections-near-limit';

/**
 * `mysql/connections-near-limit`: a server's connected threads (`Threads_connected`) reach
 * `ratio` of its `max_connections` at the check's moment: new connections are about to be
 * refused ("Too many connections").
 */
export const connections: CauseDefinition = {
  id: ID,
  title: 'MySQL connections near max_connections',
  specificity: 60,
  applies: MYSQL,
  reads: ['metrics'],
  settings: { ratio: 0.9 },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { describedAll, evidenceOf, listed, num, overAll, percent, place, rounded, seriesName } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const ratio = set.number('ratio', 0, 1);
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const where = describedAll(placed.placement);
    const r = await ctx.metrics.query(
      overAll(
        placed.placement,
        (s) => `max by (instance) (mysql_global_status_threads_connected{${s}}) / max by (instance) (mysql_global_variables_max_connections{${s}})`,
      ),
    );
    if (r.samples.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no mysql_global_status_threads_connected or mysql_global_variables_max_connections series for ${where}: link the targets of its prometheus-mysqld-exporter`,
      };
    const rows = r.samples
      .map((s) => ({ name: seriesName(s.metric), instance: s.metric.instance ?? seriesName(s.metric), used: num(s.value) }))
      .sort((a, b) => b.used - a.used);
    const near = rows.filter((x) => x.used >= ratio);
    const observed = { ratio, servers: rows.slice(0, 20).map((x) => ({ instance: x.name, used: rounded(x.used) })) };
    const shown = (xs: typeof rows) => listed(xs.map((x) => `${x.name} at ${percent(x.used)}`));
    if (near.length > 0)
      return {
        verdict: 'holds',
        reason: `${shown(near)} of max_connections (at least ${percent(ratio)}): new connections to ${where} are about to be refused`,
        evidence: [evidenceOf(r, 'metric', observed, `Sessions over max_connections: ${shown(rows)}.`)],
        subjects: near.map((x) => x.instance),
        verification: { cause: ID, expect: 'ruled_out', after_s: 120 },
      };
    return {
      verdict: 'ruled_out',
      reason: `every MySQL of ${where} is below ${percent(ratio)} of max_connections (highest: ${shown(rows.slice(0, 1))})`,
      evidence: [evidenceOf(r, 'metric', observed, `Sessions over max_connections: ${shown(rows)}.`)],
    };
  },
};
