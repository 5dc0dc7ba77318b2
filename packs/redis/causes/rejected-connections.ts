import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { REDIS } from '../applies.ts';

const ID = 'redis/rejected-connections';

/**
 * `redis/rejected-connections`: a Redis refused client connections in the window because it had
 * `maxclients` of them (`redis_rejected_connections_total` grew). One query, the evidence. See README.md.
 */
export const rejectedConnections: CauseDefinition = {
  id: ID,
  title: 'Redis rejecting connections at maxclients',
  specificity: 60,
  applies: REDIS,
  reads: ['metrics'],
  settings: { window: '5m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { count, describedAll, evidenceOf, labelsOf, listed, num, overAll, place, seriesName, MAX_SERIES } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const window = set.duration('window');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const where = describedAll(placed.placement);
    const w = window.text;
    const r = await ctx.metrics.query(overAll(placed.placement, (s) => `increase(redis_rejected_connections_total{${s}}[${w}])`));
    if (r.samples.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no redis_rejected_connections_total series for ${where}: link the targets of its prometheus-redis-exporter`,
      };
    const rows = r.samples.map((s) => ({ metric: s.metric, rejected: Math.max(0, Math.round(num(s.value))) })).sort((a, b) => b.rejected - a.rejected);
    const hit = rows.filter((x) => x.rejected >= 1);
    const evidence = [
      evidenceOf(
        r,
        'metric',
        { window: w, redis: rows.slice(0, MAX_SERIES).map((x) => ({ labels: labelsOf(x.metric), rejected: x.rejected })), total: rows.length },
        hit.length > 0
          ? `Over ${w}, Redis rejected connections at maxclients: ${listed(hit.map((x) => `${seriesName(x.metric)} ${x.rejected}`))}.`
          : `Over ${w}, no Redis rejected a connection (${count(rows.length, 'instance')}).`,
      ),
    ];
    if (hit.length > 0)
      return {
        verdict: 'holds',
        reason: `Redis of ${where} rejected connections in the last ${w}, having maxclients clients: ${listed(hit.map((x) => `${seriesName(x.metric)} ${count(x.rejected, 'connection')}`))}`,
        evidence,
        subjects: hit.map((x) => x.metric.instance ?? seriesName(x.metric)),
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, window.s + 60) },
      };
    return { verdict: 'ruled_out', reason: `no Redis of ${where} rejected a connection in the last ${w}`, evidence };
  },
};
