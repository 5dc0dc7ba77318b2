import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { NO_ACKS, NO_QUEUES, perQueue, perQueueAcks, queueKey, queueName, RABBITMQ } from '../queues.ts';

const ID = 'rabbitmq/consumers-stuck';

/**
 * `rabbitmq/consumers-stuck`: a queue has consumers, `min_unacked` or more of its messages were
 * delivered and unacknowledged for the whole window (`min_over_time(messages_unacked[window])`),
 * and its consumers acknowledged none in it (`increase(channel_messages_acked_total[window])`
 * summed per queue is under 1): a consumer that is hung, or never acks, sits on its prefetch. A
 * busy consumer that acks is not this, nor a queue without consumers (`no-consumers`). The
 * queries that decide are the evidence. See README.md.
 */
export const consumersStuck: CauseDefinition = {
  id: ID,
  title: 'Queue consumers not acknowledging',
  specificity: 60,
  // The stuck consumer sits on its prefetch while publishers go on: the backlog grows behind it.
  explains: ['rabbitmq/queue-backlog'],
  applies: RABBITMQ,
  reads: ['metrics'],
  settings: { min_unacked: 1, window: '5m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { count, describedAll, evidenceOf, labelsOf, listed, num, overAll, place, MAX_SERIES } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const minUnacked = set.number('min_unacked', 0);
    const window = set.duration('window');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;
    const where = describedAll(p);
    const w = window.text;

    // One read after the other: the study paces a connector's reads one at a time.
    const unacked = await ctx.metrics.query(overAll(p, (s) => perQueue(s, 'messages_unacked', { name: 'min_over_time', window: w })));
    if (unacked.samples.length === 0)
      return { verdict: 'unknown', obstacle: "the data isn't there", reason: `no per-queue series of unacknowledged messages for ${where}: ${NO_QUEUES}` };
    const rows = unacked.samples
      .map((s) => ({ metric: s.metric, key: queueKey(s), name: queueName(s.metric), unacked: Math.round(num(s.value)) }))
      .sort((a, b) => b.unacked - a.unacked);
    const held = rows.filter((r) => r.unacked >= minUnacked);
    const evidence = [
      evidenceOf(
        unacked,
        'metric',
        {
          window: w,
          min_unacked: minUnacked,
          queues: rows.slice(0, MAX_SERIES).map((r) => ({ labels: labelsOf(r.metric), unacked: r.unacked })),
          total: rows.length,
        },
        `Fewest messages unacknowledged over ${w}: ${listed(rows.map((r) => `${r.name} ${r.unacked}`))} (threshold ${minUnacked}).`,
      ),
    ];
    if (held.length === 0)
      return {
        verdict: 'ruled_out',
        reason: `no queue of ${where} had ${count(minUnacked, 'message')} or more unacknowledged for all of the last ${w} (most: ${rows[0]!.name} ${rows[0]!.unacked})`,
        evidence,
      };

    const consumers = await ctx.metrics.query(overAll(p, (s) => perQueue(s, 'consumers')));
    const consumersBy = new Map(consumers.samples.map((s) => [queueKey(s), num(s.value)]));
    const acks = await ctx.metrics.query(overAll(p, (s) => perQueueAcks(s, w)));
    const acksBy = new Map(acks.samples.map((s) => [queueKey(s), num(s.value)]));
    const found = held.map((r) => ({ ...r, consumers: consumersBy.get(r.key) ?? 0, acks: acksBy.get(r.key) }));
    const consumed = found.filter((r) => r.consumers > 0);
    const stuck = consumed.filter((r) => r.acks !== undefined && r.acks < 1);
    const acking = consumed.filter((r) => r.acks !== undefined && r.acks >= 1);
    const unseen = consumed.filter((r) => r.acks === undefined);
    const acked = (r: (typeof found)[number]) => (r.acks === undefined ? 'no series' : Math.round(r.acks));
    evidence.push(
      evidenceOf(
        consumers,
        'metric',
        { queues: found.slice(0, MAX_SERIES).map((r) => ({ labels: labelsOf(r.metric), consumers: r.consumers })) },
        `Consumers now of the queues holding unacknowledged messages: ${listed(found.map((r) => `${r.name} ${r.consumers}`))}.`,
      ),
      evidenceOf(
        acks,
        'metric',
        { window: w, queues: found.slice(0, MAX_SERIES).map((r) => ({ labels: labelsOf(r.metric), acked: acked(r) })) },
        `Messages acknowledged over ${w}: ${listed(found.map((r) => `${r.name} ${acked(r)}`))}.`,
      ),
    );
    if (stuck.length > 0)
      return {
        verdict: 'holds',
        reason: `the consumers of ${count(stuck.length, 'queue')} of ${where} held messages unacknowledged for all of the last ${w} and acknowledged none: ${listed(stuck.map((r) => `${r.name} (${count(r.unacked, 'message')} unacknowledged, ${count(r.consumers, 'consumer')})`))}; a consumer that is hung or never acks keeps its prefetch until its channel closes, and the queue's other messages wait behind it`,
        evidence,
        subjects: stuck.map((r) => r.name).slice(0, 50),
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, window.s + 60) },
      };
    if (unseen.length > 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no acknowledgement series for ${listed(unseen.map((r) => r.name))}, whose consumers held messages unacknowledged for all of the last ${w}: ${NO_ACKS}`,
      };
    const idle = found.filter((r) => r.consumers === 0);
    const why = [
      ...(acking.length > 0
        ? [
            `the consumers of ${listed(acking.map((r) => `${r.name} (${count(r.unacked, 'message')} unacknowledged)`))} acknowledged messages in the last ${w} (${listed(acking.map((r) => `${r.name} ${Math.round(r.acks!)}`))}): busy, not stuck`,
          ]
        : []),
      ...(idle.length > 0
        ? [`${listed(idle.map((r) => r.name))} ${idle.length === 1 ? 'has' : 'have'} no consumer now (fetched with basic.get, or the consumer left)`]
        : []),
    ];
    return {
      verdict: 'ruled_out',
      reason: `no queue of ${where} has consumers that held messages unacknowledged for all of the last ${w} without acknowledging one: ${why.join('; ')}`,
      evidence,
    };
  },
};
