import type { CauseDefinition, CheckAnswer, CheckContext, EvidenceInput, MetricSample, PrometheusLibrary } from '../../../host/plugins/contract.ts';

const ID = 'prometheus/disk-full';

/** A filesystem's name for a sentence: `instance:mountpoint`. */
const fsName = (m: Record<string, string>) => `${m.instance ?? m.job ?? '?'}:${m.mountpoint ?? m.device ?? '?'}`;

/** Filesystems as `observed` keeps them: the riskiest first, at most MAX_SERIES. */
function fsObserved(
  lib: PrometheusLibrary,
  samples: MetricSample[],
  key: string,
  risky: (v: number) => boolean,
  extra: Record<string, unknown>,
): Record<string, unknown> {
  const { num, MAX_SERIES, labelsOf, rounded } = lib;
  const sorted = [...samples].sort((a, b) => num(a.value) - num(b.value));
  return {
    ...extra,
    filesystems: sorted.slice(0, MAX_SERIES).map((s) => ({ labels: labelsOf(s.metric), [key]: rounded(num(s.value)) })),
    total: samples.length,
    at_risk: samples.filter((s) => risky(num(s.value))).length,
  };
}

/**
 * `prometheus/disk-full`: a filesystem of the service's hosts (node_exporter) has less than
 * `free_ratio` of its space free, or will be full within `predict_hours` at the rate of the last
 * `predict_window` (`predict_linear`). Read-only filesystems are left out (they are full by
 * design), as are pseudo-filesystems without a type.
 */
export const diskFull: CauseDefinition = {
  id: ID,
  title: 'Disk full or filling up',
  specificity: 65,
  applies: {
    alerts: ['NodeFilesystem*', 'NodeDisk*', 'HostOutOfDiskSpace', 'HostDisk*', 'Disk*', 'KubePersistentVolume*'],
    labels: ['mountpoint=~".+"'],
    technologies: ['postgres', 'postgresql', 'mysql', 'mariadb', 'mongodb', 'elasticsearch', 'opensearch', 'kafka', 'clickhouse', 'cassandra', 'prometheus'],
  },
  reads: ['metrics'],
  settings: { free_ratio: 0.05, predict_window: '1h', predict_hours: 4 },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { bytes, count, describedAll, evidenceOf, listed, num, overAll, percent, place } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const threshold = set.number('free_ratio', 0, 1);
    const predictWindow = set.duration('predict_window');
    const hours = set.number('predict_hours', 0, 24 * 30);
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;

    const where = describedAll(p);
    const fs = (sel: string) => `${sel},fstype!=""`;
    const readonly = (sel: string) => `node_filesystem_readonly{${sel}} == 1`;
    const ratio = await ctx.metrics.query(
      overAll(p, (sel) => `(node_filesystem_avail_bytes{${fs(sel)}} / node_filesystem_size_bytes{${fs(sel)}}) unless ${readonly(sel)}`),
    );
    if (ratio.samples.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no node_exporter filesystem series (node_filesystem_avail_bytes) for ${where}: link the service's node_exporter targets as workloads`,
      };
    const filesystems = ratio.samples.length;
    const low = ratio.samples.filter((s) => num(s.value) < threshold);
    const full = low.map((s) => `${fsName(s.metric)} (${percent(num(s.value))} free)`);
    const evidence: EvidenceInput[] = [
      evidenceOf(
        ratio,
        'metric',
        fsObserved(ctx.lib.prometheus, ratio.samples, 'free_ratio', (v) => v < threshold, { threshold }),
        low.length > 0
          ? `${low.length} of ${filesystems} filesystems ${low.length === 1 ? 'has' : 'have'} less than ${percent(threshold)} free: ${listed(low.map((s) => `${fsName(s.metric)} ${percent(num(s.value))}`))}.`
          : `${filesystems === 1 ? 'The one filesystem' : `All ${filesystems} filesystems`} ${filesystems === 1 ? 'has' : 'have'} at least ${percent(threshold)} free (least: ${percent(Math.min(...ratio.samples.map((s) => num(s.value))))}).`,
      ),
    ];
    const trend = await ctx.metrics.query(
      overAll(p, (sel) => `predict_linear(node_filesystem_avail_bytes{${fs(sel)}}[${predictWindow.text}], ${hours} * 3600) unless ${readonly(sel)}`),
    );
    const gone = trend.samples.filter((s) => num(s.value) < 0);
    const filling = gone.map((s) => fsName(s.metric));
    evidence.push(
      evidenceOf(
        trend,
        'metric',
        fsObserved(ctx.lib.prometheus, trend.samples, 'predicted_avail_bytes', (v) => v < 0, { hours }),
        gone.length > 0
          ? `At the rate of the last ${predictWindow.text}, ${count(gone.length, 'filesystem')} will be full within ${hours} h: ${listed(filling)}.`
          : trend.samples.length > 0
            ? `At the rate of the last ${predictWindow.text}, no filesystem fills up within ${hours} h (least predicted free: ${bytes(Math.min(...trend.samples.map((s) => num(s.value))))}).`
            : `No trend of the last ${predictWindow.text} for the filesystems (too few samples).`,
      ),
    );
    if (full.length > 0 || filling.length > 0) {
      const parts = [
        ...(full.length > 0 ? [`less than ${percent(threshold)} free on ${listed(full)}`] : []),
        ...(filling.length > 0 ? [`predicted full within ${hours} h on ${listed(filling)}`] : []),
      ];
      return {
        verdict: 'holds',
        reason: `disk space of ${where}: ${parts.join('; ')}`,
        evidence,
        subjects: [...new Set([...low, ...gone].map((s) => s.metric.instance ?? fsName(s.metric)))],
        verification: { cause: ID, expect: 'ruled_out' },
      };
    }
    return {
      verdict: 'ruled_out',
      reason: `${filesystems === 1 ? 'the one filesystem' : `all ${filesystems} filesystems`} of ${where} ${filesystems === 1 ? 'has' : 'have'} at least ${percent(threshold)} free and none fills up within ${hours} h`,
      evidence,
    };
  },
};
