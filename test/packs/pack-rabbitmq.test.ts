// The `rabbitmq` pack against a RabbitMQ node of the test's own (Debian's rabbitmq-server with its
// rabbitmq_prometheus plugin; the machine's node on 5672 is never touched), scraped every second by
// Debian's Prometheus on /metrics and /metrics/detailed: a consumer cancelled, messages published
// with nobody to take them, a backlog grown, a memory alarm raised, a consumer that takes its
// prefetch and never acks, each for real over AMQP and rabbitmqctl.
import { existsSync } from 'node:fs';
import type { ExecutionContext } from 'ava';
import amqp from 'amqplib';
import { testNeeding } from '../helpers/needs.ts';
import { check, rerun, service, untilPrometheus, workload } from '../helpers/pack-live.ts';
import { PROMETHEUS_BIN, startPrometheus } from '../helpers/prometheus.ts';
import { DETAILED, RABBITMQ_SERVER, RABBITMQCTL, startRabbit } from '../helpers/rabbitmq.ts';

const missing = (
  [
    [PROMETHEUS_BIN, 'prometheus'],
    [RABBITMQ_SERVER, 'rabbitmq-server'],
    [RABBITMQCTL, 'rabbitmq-server'],
  ] as const
).find(([bin]) => !existsSync(bin));

/** A node of the test's own, scraped by Prometheus as job `mq` (/metrics) and `mq-queues` (/metrics/detailed), and an AMQP connection to it. */
async function scrapedBroker(t: ExecutionContext, name?: string) {
  const mq = await startRabbit(t, name === undefined ? {} : { name });
  const prom = await startPrometheus(t, {
    jobs: [
      { job: 'mq', targets: [mq.metrics] },
      { job: 'mq-queues', targets: [mq.metrics], ...DETAILED },
    ],
  });
  const conn = await amqp.connect(mq.amqp);
  t.teardown(() => conn.close().catch(() => undefined));
  return { mq, prom, conn };
}

/** The estate's entry of the broker: both scrape jobs linked. */
const broker = service('broker', [workload('job="mq"'), workload('job="mq-queues"')], { technologies: ['rabbitmq'] });

testNeeding(
  missing === undefined ? null : `${missing[0]} not found (apt-get install ${missing[1]})`,
  'rabbitmq: ruled out on a broker whose queues are consumed; then a queue with messages and no consumer, a backlog growing and a memory alarm each hold',
  async (t) => {
    const { mq, prom, conn } = await scrapedBroker(t);
    const ch = await conn.createChannel();
    await ch.assertQueue('orders.work');
    await ch.assertQueue('orders.dead');
    const consumer = await ch.consume('orders.work', (m) => m !== null && ch.ack(m));
    for (let i = 0; i < 20; i++) ch.sendToQueue('orders.work', Buffer.from(`order ${i}`));
    await untilPrometheus(prom.base, 'rabbitmq_detailed_queue_consumers', (s) => s.length === 2, 60_000);
    await untilPrometheus(
      prom.base,
      'count_over_time(rabbitmq_detailed_queue_messages_ready[1m])',
      (s) => s.length === 2 && s.every((x) => x.value >= 2),
      60_000,
    );

    for (const id of ['rabbitmq/no-consumers', 'rabbitmq/queue-backlog', 'rabbitmq/resource-alarm']) {
      const v = await check(prom.base, id, broker);
      t.is(v.verdict, 'ruled_out', `${id}: ${v.reason}`);
    }
    const calm = await check(prom.base, 'rabbitmq/no-consumers', broker);
    t.regex(calm.reason, /without a consumer holds fewer than 1 messages ready \(\/orders\.dead 0\)/, 'an empty queue without a consumer harms nobody');

    // Messages for a queue nobody consumes; and the consumer of orders.work cancelled a moment ago.
    for (let i = 0; i < 30; i++) ch.sendToQueue('orders.dead', Buffer.from(`lost ${i}`));
    await ch.cancel(consumer.consumerTag);
    for (let i = 0; i < 5; i++) ch.sendToQueue('orders.work', Buffer.from(`waiting ${i}`));
    await untilPrometheus(prom.base, 'rabbitmq_detailed_queue_messages_ready >= 5', (s) => s.length === 2, 60_000);
    await untilPrometheus(prom.base, 'rabbitmq_detailed_queue_consumers{queue="orders.work"}', (s) => s[0]?.value === 0, 60_000);
    const lost = await check(prom.base, 'rabbitmq/no-consumers', broker);
    t.is(lost.verdict, 'holds', lost.reason);
    t.regex(lost.reason, /1 queue of .* has messages waiting and had no consumer for all of the last 30s: \/orders\.dead \(30 messages ready\)/);
    t.deepEqual(lost.subjects, ['/orders.dead'], 'orders.work had a consumer within the 30 s: a near miss, not a hold');
    for (const e of lost.evidence) t.true((await rerun(prom.base, e.query, e.at)).length > 0, `${e.query} re-runs`);

    // Publishers outpace the (absent) consumers: orders.work grows by 600.
    for (let i = 0; i < 600; i++) ch.sendToQueue('orders.work', Buffer.from(`burst ${i}`));
    await untilPrometheus(prom.base, 'delta(rabbitmq_detailed_queue_messages_ready{queue="orders.work"}[5m])', (s) => (s[0]?.value ?? 0) >= 500, 60_000);
    const backlog = await check(prom.base, 'rabbitmq/queue-backlog', broker);
    t.is(backlog.verdict, 'holds', backlog.reason);
    t.regex(backlog.reason, /grew by at least 500 messages in the last 5m: \/orders\.work \+\d+/);

    // A memory high watermark no node can stay under: the alarm blocks publishers.
    await mq.ctl('set_vm_memory_high_watermark', '0.0001');
    t.teardown(() => mq.ctl('set_vm_memory_high_watermark', '0.4').catch(() => undefined));
    await untilPrometheus(prom.base, 'rabbitmq_alarms_memory_used_watermark{job="mq"}', (s) => s[0]?.value === 1, 60_000);
    const alarm = await check(prom.base, 'rabbitmq/resource-alarm', broker);
    t.is(alarm.verdict, 'holds', alarm.reason);
    t.regex(alarm.reason, /memory above its high watermark/);
    await mq.ctl('set_vm_memory_high_watermark', '0.4');
    await untilPrometheus(prom.base, 'rabbitmq_alarms_memory_used_watermark{job="mq"}', (s) => s[0]?.value === 0, 60_000);
    const since = await check(prom.base, 'rabbitmq/resource-alarm', broker);
    t.is(since.verdict, 'holds', `an alarm cleared within the window still counts: ${since.reason}`);
  },
);

testNeeding(
  missing === undefined ? null : `${missing[0]} not found (apt-get install ${missing[1]})`,
  'rabbitmq: consumers-stuck is ruled out while busy consumers ack, holds once a consumer takes its prefetch and never acks while publishing goes on',
  async (t) => {
    const { prom, conn } = await scrapedBroker(t, 'oncall-stuck');
    const pub = await conn.createChannel();
    await pub.assertQueue('jobs.ok');
    await pub.assertQueue('jobs.stuck');
    // A worker per queue, each message acknowledged a second after it came (the work): always
    // some unacknowledged, and acknowledgements all along. Publishers go on at 10 messages/s each.
    const working = new Set<NodeJS.Timeout>();
    t.teardown(() => working.forEach((w) => clearTimeout(w)));
    const worker = async (queue: string) => {
      const ch = await conn.createChannel();
      await ch.prefetch(20);
      const c = await ch.consume(queue, (m) => {
        if (m === null) return;
        const work = setTimeout(() => {
          working.delete(work);
          ch.ack(m);
        }, 1000);
        working.add(work);
      });
      return { ch, tag: c.consumerTag };
    };
    await worker('jobs.ok');
    const first = await worker('jobs.stuck');
    let n = 0;
    const publishing = setInterval(() => {
      pub.sendToQueue('jobs.ok', Buffer.from(`job ${n}`));
      pub.sendToQueue('jobs.stuck', Buffer.from(`job ${n++}`));
    }, 100);
    t.teardown(() => clearInterval(publishing));
    const settings = { window: '20s' };

    // Both busy for all of the 20s: unacknowledged messages throughout, acknowledged too.
    await untilPrometheus(
      prom.base,
      'min_over_time(rabbitmq_detailed_queue_messages_unacked[20s]) >= 1 and count_over_time(rabbitmq_detailed_queue_messages_unacked[20s]) >= 15',
      (s) => s.length === 2,
      90_000,
    );
    const busy = await check(prom.base, 'rabbitmq/consumers-stuck', broker, { settings });
    t.is(busy.verdict, 'ruled_out', busy.reason);
    t.regex(
      busy.reason,
      /the consumers of \/jobs\.(ok|stuck) \(\d+ messages? unacknowledged\), \/jobs\.(ok|stuck) .* acknowledged messages in the last 20s .*: busy, not stuck/,
    );
    t.is(busy.evidence.length, 3, 'it read unacknowledged messages, consumers and acknowledgements');
    const calm = await check(prom.base, 'rabbitmq/consumers-stuck', broker);
    t.is(calm.verdict, 'ruled_out', `silent on healthy queues at the default settings: ${calm.reason}`);

    // The worker of jobs.stuck replaced by a consumer that takes its prefetch of 25 and never acks.
    await first.ch.cancel(first.tag);
    const hung = await conn.createChannel();
    await hung.prefetch(25);
    await hung.consume('jobs.stuck', () => undefined);
    await untilPrometheus(prom.base, 'rabbitmq_detailed_queue_messages_unacked{queue="jobs.stuck"}', (s) => s[0]?.value === 25, 60_000);
    const moment = await check(prom.base, 'rabbitmq/consumers-stuck', broker, { settings });
    t.is(moment.verdict, 'ruled_out', `stuck for seconds, not the 20s: a near miss (${moment.reason})`);

    // 20 s on: no acknowledgement of jobs.stuck left in the window, its 25 held all along.
    await untilPrometheus(
      prom.base,
      'sum(increase(rabbitmq_detailed_channel_messages_acked_total{queue="jobs.stuck"}[20s]))',
      (s) => s.length === 1 && s[0]!.value === 0,
      60_000,
    );
    await untilPrometheus(prom.base, 'min_over_time(rabbitmq_detailed_queue_messages_unacked{queue="jobs.stuck"}[20s]) >= 25', (s) => s.length === 1, 60_000);
    const stuck = await check(prom.base, 'rabbitmq/consumers-stuck', broker, { settings });
    t.is(stuck.verdict, 'holds', stuck.reason);
    t.regex(stuck.reason, /the consumers of 1 queue of .* acknowledged none: \/jobs\.stuck \(25 messages unacknowledged, 1 consumer\)/);
    t.deepEqual(stuck.subjects, ['/jobs.stuck'], 'jobs.ok, whose worker acks, is not named');
    // Each item's query, re-run at its moment, gives the numbers it recorded.
    const [unackedE, consumersE, acksE] = stuck.evidence;
    const at = (rows: Array<{ metric: Record<string, string>; value: number }>, q: string) => rows.find((r) => r.metric.queue === q)?.value;
    t.is(at(await rerun(prom.base, unackedE!.query, unackedE!.at), 'jobs.stuck'), 25);
    t.is(at(await rerun(prom.base, consumersE!.query, consumersE!.at), 'jobs.stuck'), 1);
    t.is(at(await rerun(prom.base, acksE!.query, acksE!.at), 'jobs.stuck'), 0);
    t.like(acksE!.observed, { window: '20s' });
    const acked = (acksE!.observed as { queues: Array<{ labels: Record<string, string>; acked: number }> }).queues;
    t.is(acked.find((q) => q.labels.queue === 'jobs.stuck')?.acked, 0);
    t.true((acked.find((q) => q.labels.queue === 'jobs.ok')?.acked ?? 0) >= 1, 'the busy worker of jobs.ok acknowledged messages meanwhile');
  },
);
