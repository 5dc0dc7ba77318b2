import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { NO_QUEUES, perQueue, queueName, RABBITMQ } from '../queues.ts';

const ID = 'rabbitmq/queue-backlog';

/**
 * `rabbitmq/queue-backlog`: a queue's messages ready for delivery grew by `min_growth` or more
 * over the window (`delta(messages_ready[window])`): publishers outpace consumers. One query,
 * the evidence. See README.md.
 */
export const queueBacklog: CauseDefinition = {
  id: ID,
  title: 'Queue backlog growing',
  specificity: 45,
  applies: RABBITMQ,
  reads: ['metrics'],
  settings: { min_growth: 500, window: '5m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { count, describedAll, evidenceOf, labelsOf, listed, num, overAll, place, MAX_SERIES } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const minGrowth = set.number('min_growth', 0);
    const window = set.duration('window');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const where = describedAll(placed.placement);
    const w = window.text;
    const r = await ctx.metrics.query(overAll(placed.placement, (s) => perQueue(s, 'messages_ready', { name: 'delta', window: w })));
    if (r.samples.length === 0)
      return { verdict: 'unknown', obstacle: "the data isn't there", reason: `no per-queue series of messages ready for ${where}: ${NO_QUEUES}` };
    const rows = r.samples.map((s) => ({ metric: s.metric, name: queueName(s.metric), growth: Math.round(num(s.value)) })).sort((a, b) => b.growth - a.growth);
    const growing = rows.filter((x) => x.growth >= minGrowth);
    const evidence = [
      evidenceOf(
        r,
        'metric',
        {
          window: w,
          min_growth: minGrowth,
          queues: rows.slice(0, MAX_SERIES).map((x) => ({ labels: labelsOf(x.metric), growth: x.growth })),
          total: rows.length,
        },
        `Growth of messages ready over ${w}: ${listed(rows.map((x) => `${x.name} ${x.growth >= 0 ? '+' : ''}${x.growth}`))} (threshold +${minGrowth}).`,
      ),
    ];
    if (growing.length > 0)
      return {
        verdict: 'holds',
        reason: `the backlog of ${count(growing.length, 'queue')} of ${where} grew by at least ${minGrowth} messages in the last ${w}: ${listed(growing.map((x) => `${x.name} +${x.growth}`))}`,
        evidence,
        subjects: growing.map((x) => x.name).slice(0, 50),
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, window.s + 60) },
      };
    return {
      verdict: 'ruled_out',
      reason: `no queue of ${where} grew by ${minGrowth} messages or more in the last ${w} (most: ${rows[0]!.name} ${rows[0]!.growth >= 0 ? '+' : ''}${rows[0]!.growth})`,
      evidence,
    };
  },
};
