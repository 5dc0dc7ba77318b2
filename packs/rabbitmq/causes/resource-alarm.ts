import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { RABBITMQ } from '../queues.ts';

const ID = 'rabbitmq/resource-alarm';

/** The plugin's alarm gauges and what each is, for people. */
const ALARMS: Array<[string, string, string]> = [
  ['memory', 'rabbitmq_alarms_memory_used_watermark', 'memory above its high watermark'],
  ['disk', 'rabbitmq_alarms_free_disk_space_watermark', 'free disk under its limit'],
  ['file_descriptors', 'rabbitmq_alarms_file_descriptor_limit', 'file descriptors at their limit'],
];

/**
 * `rabbitmq/resource-alarm`: a node raised a memory, disk or file descriptor alarm at some point
 * of the window (`max_over_time(rabbitmq_alarms_…[window]) == 1`): RabbitMQ then blocks every
 * publishing connection of the cluster until it clears. One query (the three gauges, each
 * labelled `alarm`), the evidence. See README.md.
 */
export const resourceAlarm: CauseDefinition = {
  id: ID,
  title: 'Memory or disk alarm blocking publishers',
  specificity: 70,
  applies: RABBITMQ,
  reads: ['metrics'],
  settings: { window: '5m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { describedAll, evidenceOf, listed, num, overAll, place, samplesObserved, seriesName } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const window = set.duration('window');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const where = describedAll(placed.placement);
    const w = window.text;
    const r = await ctx.metrics.query(
      overAll(placed.placement, (s) =>
        ALARMS.map(([alarm, metric]) => `label_replace(max_over_time(${metric}{${s}}[${w}]), "alarm", "${alarm}", "", "")`).join(' or '),
      ),
    );
    if (r.samples.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no rabbitmq_alarms_* series for ${where}: scrape the rabbitmq_prometheus plugin's /metrics`,
      };
    const what = new Map(ALARMS.map(([alarm, , words]) => [alarm, words]));
    const raised = r.samples.filter((s) => num(s.value) >= 1);
    const nodes = new Set(r.samples.map((s) => s.metric.instance ?? seriesName(s.metric))).size;
    const named = (s: (typeof r.samples)[number]) => `${s.metric.instance ?? seriesName(s.metric)}: ${what.get(s.metric.alarm ?? '') ?? s.metric.alarm ?? '?'}`;
    const evidence = [
      evidenceOf(
        r,
        'metric',
        samplesObserved(raised.length > 0 ? raised : r.samples, { window: w, nodes, raised: raised.length }),
        raised.length > 0
          ? `Within the last ${w}, RabbitMQ raised ${listed(raised.map(named))}.`
          : `Within the last ${w}, no node of the ${nodes} raised a memory, disk or file descriptor alarm.`,
      ),
    ];
    if (raised.length > 0)
      return {
        verdict: 'holds',
        reason: `RabbitMQ of ${where} raised a resource alarm within the last ${w}, which blocks publishers: ${listed(raised.map(named))}`,
        evidence,
        subjects: [...new Set(raised.map((s) => s.metric.instance ?? seriesName(s.metric)))],
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, window.s + 60) },
      };
    return { verdict: 'ruled_out', reason: `no RabbitMQ node of ${where} raised a memory, disk or file descriptor alarm in the last ${w}`, evidence };
  },
};
