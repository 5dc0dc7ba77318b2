import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { NO_QUEUES, perQueue, queueKey, queueName, RABBITMQ } from '../queues.ts';

const ID = 'rabbitmq/no-consumers';

/**
 * `rabbitmq/no-consumers`: a queue holds messages ready for delivery (`min_ready` or more, now)
 * and has had no consumer for the whole of `for` (`max_over_time(consumers[for]) == 0`): a
 * consumer reconnecting for a moment is not this. Both queries decide and are the evidence. See
 * README.md.
 */
export const noConsumers: CauseDefinition = {
  id: ID,
  title: 'A queue with messages and no consumer',
  specificity: 65,
  // Nobody consumes, so the backlog grows: the missing consumer is the cause.
  explains: ['rabbitmq/queue-backlog'],
  applies: RABBITMQ,
  reads: ['metrics'],
  settings: { min_ready: 1, for: '30s' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { count, describedAll, evidenceOf, labelsOf, listed, num, overAll, place, MAX_SERIES } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const minReady = set.number('min_ready', 0);
    const forW = set.duration('for');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;
    const where = describedAll(p);

    // One read after the other: the study paces a connector's reads one at a time.
    const consumers = await ctx.metrics.query(overAll(p, (s) => perQueue(s, 'consumers', { name: 'max_over_time', window: forW.text })));
    if (consumers.samples.length === 0)
      return { verdict: 'unknown', obstacle: "the data isn't there", reason: `no per-queue consumer series for ${where}: ${NO_QUEUES}` };
    const ready = await ctx.metrics.query(overAll(p, (s) => perQueue(s, 'messages_ready')));
    const readyBy = new Map(ready.samples.map((s) => [queueKey(s), num(s.value)]));
    const rows = consumers.samples.map((s) => ({ metric: s.metric, name: queueName(s.metric), consumers: num(s.value), ready: readyBy.get(queueKey(s)) ?? 0 }));
    const idle = rows.filter((r) => r.consumers === 0).sort((a, b) => b.ready - a.ready);
    const stuck = idle.filter((r) => r.ready >= minReady);
    const evidence = [
      evidenceOf(
        consumers,
        'metric',
        {
          for: forW.text,
          queues: rows.length,
          without_consumer: idle.slice(0, MAX_SERIES).map((r) => labelsOf(r.metric)),
          total_without_consumer: idle.length,
        },
        idle.length > 0
          ? `${idle.length} of ${rows.length} queues had no consumer for all of the last ${forW.text}: ${listed(idle.map((r) => r.name))}.`
          : `Every one of the ${rows.length} queues had a consumer within the last ${forW.text}.`,
      ),
      evidenceOf(
        ready,
        'metric',
        { min_ready: minReady, queues: idle.slice(0, MAX_SERIES).map((r) => ({ labels: labelsOf(r.metric), ready: r.ready })) },
        idle.length > 0
          ? `Messages ready in them now: ${listed(idle.map((r) => `${r.name} ${r.ready}`))}.`
          : `Messages ready per queue (none is without a consumer).`,
      ),
    ];
    if (stuck.length > 0)
      return {
        verdict: 'holds',
        reason: `${count(stuck.length, 'queue')} of ${where} ${stuck.length === 1 ? 'has' : 'have'} messages waiting and had no consumer for all of the last ${forW.text}: ${listed(stuck.map((r) => `${r.name} (${count(r.ready, 'message')} ready)`))}`,
        evidence,
        subjects: stuck.map((r) => r.name).slice(0, 50),
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, forW.s + 60) },
      };
    return {
      verdict: 'ruled_out',
      reason:
        idle.length > 0
          ? `the ${count(idle.length, 'queue')} of ${where} without a consumer ${idle.length === 1 ? 'holds' : 'hold'} fewer than ${minReady} messages ready (${listed(idle.map((r) => `${r.name} ${r.ready}`))}); every other queue has a consumer`
          : `every queue of ${where} had a consumer within the last ${forW.text}`,
      evidence,
    };
  },
};
