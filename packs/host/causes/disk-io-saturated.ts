import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { listedSamples, missing, named, placeNode } from '../node.ts';

const ID = 'host/disk-io-saturated';

/**
 * `host/disk-io-saturated`: a disk of the service's hosts (node_exporter's diskstats) was busy,
 * with at least one request in flight, more than `busy_ratio` of the window: `iostat`'s `%util`,
 * `rate(node_disk_io_time_seconds_total[…])`. Requests then queue and every read and write the
 * service makes waits. (A device that serves requests in parallel, such as an NVMe disk, can be
 * busy all the time and still have room: see README.md.) The window is the setting's, cut to
 * what the alert looked at.
 */
export const diskIoSaturated: CauseDefinition = {
  id: ID,
  title: 'Disk I/O saturated',
  specificity: 45,
  applies: {
    alerts: ['NodeDiskIO*', 'NodeDiskIo*', 'HostUnusualDisk*', 'HostDiskIo*', 'HostCpuHighIowait', 'DiskIO*', 'DiskIo*', 'HighIowait*', 'HighIOWait*'],
  },
  reads: ['metrics'],
  settings: { busy_ratio: 0.9, window: '5m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { alertWindow, evidenceOf, listed, num, overAll, percent } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const threshold = set.number('busy_ratio', 0, 1);
    const setting = set.duration('window');
    const placed = await placeNode(ctx, set.problem());
    if (!placed.ok) return placed.answer;
    const { p, where } = placed;
    const window = alertWindow(ctx, 'node_disk_io_time_seconds_total', setting);

    const busy = await ctx.metrics.query(overAll(p, (s) => `rate(node_disk_io_time_seconds_total{${s}}[${window.text}])`));
    const disks = busy.samples.filter((x) => !Number.isNaN(num(x.value)));
    if (disks.length === 0) return missing('node_disk_io_time_seconds_total', 'diskstats', where);
    const hot = disks.filter((x) => num(x.value) > threshold).sort((a, b) => num(b.value) - num(a.value));
    const busiest = Math.max(...disks.map((x) => num(x.value)));
    const name = (x: (typeof hot)[number]) => `${named(x.metric, ['device'])} (busy ${percent(Math.min(1, num(x.value)))} of the time)`;
    const evidence = [
      evidenceOf(
        busy,
        'metric',
        listedSamples(ctx, busy.samples, 'busy', (v) => v > threshold, 'highest', { threshold, window: window.text }),
        hot.length > 0
          ? `Over ${window.text} (${window.why}), ${hot.length} of ${disks.length} disks had requests in flight more than ${percent(threshold)} of the time: ${listed(hot.map(name))}.`
          : `Over ${window.text} (${window.why}), no disk had requests in flight more than ${percent(threshold)} of the time (busiest: ${percent(Math.min(1, busiest))}).`,
      ),
    ];
    if (hot.length > 0)
      return {
        verdict: 'holds',
        reason: `disk I/O saturated over the last ${window.text} on ${listed(hot.map(name))} (${where}): requests queue behind each other`,
        evidence,
        subjects: [...new Set(hot.map((x) => x.metric.instance ?? named(x.metric, ['device'])))],
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, setting.s + 60) },
      };
    return {
      verdict: 'ruled_out',
      reason: `no disk of ${where} was busy more than ${percent(threshold)} of the last ${window.text} (busiest: ${percent(Math.min(1, busiest))})`,
      evidence,
    };
  },
};
