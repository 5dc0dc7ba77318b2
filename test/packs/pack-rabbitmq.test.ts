// The `rabbitmq` pack against a RabbitMQ node of the test's own (Debian's rabbitmq-server with its
// rabbitmq_prometheus plugin; the machine's node on 5672 is never touched), scraped every second by
// Debian's Prometheus on /metrics and /metrics/detailed: a consumer cancelled, messages published
// with nobody to take them, a backlog grown, a memory alarm raised, each for real over AMQP and
// rabbitmqctl.
import { existsSync } from 'node:fs';
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

testNeeding(
  missing === undefined ? null : `${missing[0]} not found (apt-get install ${missing[1]})`,
  'rabbitmq: ruled out on a broker whose queues are consumed; then a queue with messages and no consumer, a backlog growing and a memory alarm each hold',
  async (t) => {
    const mq = await startRabbit(t);
    const prom = await startPrometheus(t, {
      jobs: [
        { job: 'mq', targets: [mq.metrics] },
        { job: 'mq-queues', targets: [mq.metrics], ...DETAILED },
      ],
    });
    const conn = await amqp.connect(mq.amqp);
    t.teardown(() => conn.close().catch(() => undefined));
    const ch = await conn.createChannel();
    await ch.assertQueue('orders.work');
    await ch.assertQueue('orders.dead');
    const consumer = await ch.consume('orders.work', (m) => m !== null && ch.ack(m));
    for (let i = 0; i < 20; i++) ch.sendToQueue('orders.work', Buffer.from(`order ${i}`));
    const broker = service('broker', [workload('job="mq"'), workload('job="mq-queues"')], { technologies: ['rabbitmq'] });
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
