import type { MetricSample } from '../../host/plugins/contract.ts';

/** When the rabbitmq causes apply: RabbitMQ in the service's technologies, or an alert named as the community rules name RabbitMQ alerts (`RabbitmqNoConsumer`, …). */
export const RABBITMQ = { technologies: ['rabbitmq'], alerts: ['Rabbitmq*', 'RabbitMQ*', 'RabbitMq*'] };

/**
 * A per-queue series of the rabbitmq_prometheus plugin, through `fn` (`delta`, `max_over_time`)
 * over `window`: from `/metrics/detailed` (`rabbitmq_detailed_queue_<metric>`) or, with
 * per-object metrics on, `/metrics` (`rabbitmq_queue_<metric>` with a `queue` label; without it
 * the plugin sums every queue into one series, which says nothing of any queue). Joined with
 * `or`: a queue scraped both ways counts once.
 */
export function perQueue(selector: string, metric: string, fn?: { name: string; window: string }): string {
  const detailed = `rabbitmq_detailed_queue_${metric}{${selector}}`;
  const perObject = `rabbitmq_queue_${metric}{${selector},queue!=""}`;
  return fn === undefined ? `${detailed} or ${perObject}` : `${fn.name}(${detailed}[${fn.window}]) or ${fn.name}(${perObject}[${fn.window}])`;
}

/**
 * Acknowledgements per queue over `window`, summed over the channels consuming it
 * (`increase(…channel_messages_acked_total[window])`, one series per channel and queue): from
 * `/metrics/detailed?family=channel_queue_metrics` (`rabbitmq_detailed_channel_…`) or, with
 * per-object metrics on, `/metrics` (`rabbitmq_channel_…` with a `queue` label). Joined with `or`.
 */
export function perQueueAcks(selector: string, window: string): string {
  const by = 'sum by (instance, vhost, queue)';
  return `${by} (increase(rabbitmq_detailed_channel_messages_acked_total{${selector}}[${window}])) or ${by} (increase(rabbitmq_channel_messages_acked_total{${selector},queue!=""}[${window}]))`;
}

/** A queue's name for people and as a subject: `vhost/queue` (`/orders.work` in the default vhost). */
export function queueName(m: Record<string, string>): string {
  const vhost = m.vhost ?? '?';
  return `${vhost === '/' ? '' : vhost}/${m.queue ?? '?'}`;
}

/** The key a queue is matched by across two answers: its target and its name. */
export const queueKey = (s: MetricSample): string => `${s.metric.instance ?? ''}\u0000${s.metric.vhost ?? ''}\u0000${s.metric.queue ?? ''}`;

/** What to say when no per-queue series answers. */
export const NO_QUEUES =
  'the rabbitmq_prometheus plugin answers per-queue series only from /metrics/detailed?family=queue_coarse_metrics&family=queue_consumer_count, or from /metrics with prometheus.return_per_object_metrics = true: scrape one of them';

/** What to say when no per-queue acknowledgement series answers. */
export const NO_ACKS =
  'the rabbitmq_prometheus plugin answers acknowledgements per queue only from /metrics/detailed?family=channel_queue_metrics, or from /metrics with prometheus.return_per_object_metrics = true: scrape one of them';
