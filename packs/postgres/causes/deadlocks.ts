import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { POSTGRES } from '../applies.ts';

const ID = 'postgres/deadlocks';

/**
 * `postgres/deadlocks`: PostgreSQL detected at least `min` deadlocks in the window
 * (`increase(pg_stat_database_deadlocks[window])`, per database): transactions were aborted
 * with "deadlock detected". The window is the alert's own when shorter (the pack library).
 */
export const deadlocks: CauseDefinition = {
  id: ID,
  title: 'PostgreSQL deadlocks rising',
  specificity: 65,
  applies: POSTGRES,
  reads: ['metrics'],
  settings: { min: 1, window: '10m' },
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
    const w = ctx.lib.prometheus.alertWindow(ctx, 'pg_stat_database_deadlocks', window);
    const r = await ctx.metrics.query(overAll(placed.placement, (s) => `sum by (instance, datname) (increase(pg_stat_database_deadlocks{${s}}[${w.text}]))`));
    if (r.samples.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no pg_stat_database_deadlocks series for ${where}: link the targets of its prometheus-postgres-exporter`,
      };
    const rows = r.samples
      .map((s) => ({
        name: `${seriesName(s.metric, ['instance'])} database ${s.metric.datname ?? '?'}`,
        instance: s.metric.instance ?? seriesName(s.metric),
        n: num(s.value),
      }))
      .sort((a, b) => b.n - a.n);
    const hit = rows.filter((x) => x.n >= min && x.n > 0);
    const total = rows.reduce((a, x) => a + (Number.isFinite(x.n) ? x.n : 0), 0);
    const observed = { window: w.text, min, databases: rows.slice(0, 20).map((x) => ({ database: x.name, deadlocks: rounded(x.n) })) };
    const shown = (xs: typeof rows) => listed(xs.map((x) => `${x.name}: ${Math.round(x.n)}`));
    if (hit.length > 0)
      return {
        verdict: 'holds',
        reason: `${Math.round(total)} deadlock${Math.round(total) === 1 ? '' : 's'} in the last ${w.text} on ${where} (${shown(hit)}): transactions were aborted with "deadlock detected"`,
        evidence: [evidenceOf(r, 'metric', observed, `Deadlocks in the last ${w.text} (${w.why}): ${shown(rows)}.`)],
        subjects: [...new Set(hit.map((x) => x.instance))],
        verification: { cause: ID, expect: 'ruled_out', after_s: w.s },
      };
    return {
      verdict: 'ruled_out',
      reason: `no database of ${where} had ${min > 1 ? `${min} deadlocks` : 'a deadlock'} in the last ${w.text}`,
      evidence: [evidenceOf(r, 'metric', observed, `Deadlocks in the last ${w.text} (${w.why}): ${shown(rows)}.`)],
    };
  },
};
