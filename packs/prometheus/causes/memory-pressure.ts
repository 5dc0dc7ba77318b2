import type { CauseDefinition, CheckAnswer, CheckContext, EvidenceInput, MetricSeries, PrometheusLibrary } from '../../../host/plugins/contract.ts';

const ID = 'prometheus/memory-pressure';

/** The most points asked per series: the step is the window divided by this (at least 1 s). */
const POINTS = 60;

interface Summary {
  labels: Record<string, string>;
  min: number;
  max: number;
  last: number;
  points: number;
}

/** Min, max and last of a series' values (NaN points skipped); null when it has none. */
function summarise(lib: PrometheusLibrary, s: MetricSeries): Summary | null {
  const { num, labelsOf } = lib;
  const vs = s.values.map(([, v]) => num(v)).filter((v) => !Number.isNaN(v));
  if (vs.length === 0) return null;
  return { labels: labelsOf(s.metric), min: Math.min(...vs), max: Math.max(...vs), last: vs[vs.length - 1]!, points: vs.length };
}

/**
 * `prometheus/memory-pressure`: a host of the service (node_exporter) had less than
 * `available_ratio` of its memory available (`MemAvailable / MemTotal`) at some point of the
 * last `window`. A range query, so a dip that an OOM kill has already undone still counts.
 * Chosen over a process's RSS against its limit: node_exporter's two gauges exist on every host
 * it runs on, while process limits have no common metric outside containers.
 */
export const memoryPressure: CauseDefinition = {
  id: ID,
  title: 'Memory pressure on the host',
  specificity: 50,
  applies: {
    alerts: ['NodeMemory*', 'NodeOutOfMemory', 'HostOutOfMemory', 'HostMemory*', 'Memory*', 'OOM*', 'KubeMemory*', 'ContainerMemory*'],
    technologies: ['jvm', 'java', 'redis', 'memcached', 'elasticsearch', 'opensearch'],
  },
  reads: ['metrics'],
  settings: { available_ratio: 0.1, window: '5m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { MAX_SERIES, describedAll, evidenceOf, listed, overAll, percent, place, rounded, seriesName } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const threshold = set.number('available_ratio', 0, 1);
    const window = set.duration('window');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;

    const end = Date.parse(ctx.at);
    const start = new Date(end - window.s * 1000).toISOString();
    const step_s = Math.max(1, Math.round(window.s / POINTS));
    const where = describedAll(p);
    const r = await ctx.metrics.range(
      overAll(p, (sel) => `node_memory_MemAvailable_bytes{${sel}} / node_memory_MemTotal_bytes{${sel}}`),
      { start, end: ctx.at, step_s },
    );
    const hosts = r.series.map((x) => summarise(ctx.lib.prometheus, x)).filter((s): s is Summary => s !== null);
    if (hosts.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no node_exporter memory series (node_memory_MemAvailable_bytes) for ${where}: link the service's node_exporter targets as workloads`,
      };
    hosts.sort((a, b) => a.min - b.min);
    const low = hosts.filter((h) => h.min < threshold);
    const name = (h: Summary) => `${seriesName(h.labels)} (min ${percent(h.min)}, now ${percent(h.last)})`;
    const evidence: EvidenceInput[] = [
      evidenceOf(
        r,
        'series',
        {
          threshold,
          start,
          step_s,
          hosts: hosts.slice(0, MAX_SERIES).map((h) => ({ labels: h.labels, min: rounded(h.min), max: rounded(h.max), last: rounded(h.last) })),
          total: hosts.length,
        },
        low.length > 0
          ? `Over the last ${window.text}, ${low.length} of ${hosts.length} hosts had less than ${percent(threshold)} of memory available: ${listed(low.map(name))}.`
          : `Over the last ${window.text}, every host kept at least ${percent(threshold)} of memory available (least: ${seriesName(hosts[0]!.labels)}, min ${percent(hosts[0]!.min)}).`,
      ),
    ];
    if (low.length > 0)
      return {
        verdict: 'holds',
        reason: `memory available fell below ${percent(threshold)} in the last ${window.text} on ${listed(low.map(name))} (${where})`,
        evidence,
        subjects: low.map((h) => h.labels.instance ?? seriesName(h.labels)),
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, window.s + 60) },
      };
    return {
      verdict: 'ruled_out',
      reason: `memory available stayed at or above ${percent(threshold)} over the last ${window.text} on ${where}, least ${seriesName(hosts[0]!.labels)} at ${percent(hosts[0]!.min)}`,
      evidence,
    };
  },
};
