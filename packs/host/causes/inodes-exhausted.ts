import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { listedSamples, missing, named, placeNode } from '../node.ts';

const ID = 'host/inodes-exhausted';

/**
 * `host/inodes-exhausted`: a writable filesystem of the service's hosts (node_exporter) has less
 * than `free_ratio` of its inodes free: files cannot be created although bytes are free ("No
 * space left on device" with `df` showing room). Filesystems that report no inodes at all (btrfs,
 * vfat), pseudo-filesystems without a type and read-only ones are left out, as
 * `prometheus/disk-full` leaves them out for bytes.
 */
export const inodesExhausted: CauseDefinition = {
  id: ID,
  title: 'Inodes exhausted on a filesystem',
  specificity: 65,
  applies: {
    alerts: ['HostOutOfInodes', 'HostInodes*', 'NodeFilesystem*', 'HostOutOfDiskSpace', 'HostDisk*', 'Disk*', 'Inode*'],
    labels: ['mountpoint=~".+"'],
  },
  reads: ['metrics'],
  settings: { free_ratio: 0.05 },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { evidenceOf, listed, num, overAll, percent } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const threshold = set.number('free_ratio', 0, 1);
    const placed = await placeNode(ctx, set.problem());
    if (!placed.ok) return placed.answer;
    const { p, where } = placed;

    const fs = (s: string) => `${s},fstype!=""`;
    const ratio = await ctx.metrics.query(
      overAll(p, (s) => `node_filesystem_files_free{${fs(s)}} / (node_filesystem_files{${fs(s)}} > 0) unless node_filesystem_readonly{${s}} == 1`),
    );
    if (ratio.samples.length === 0) return missing('node_filesystem_files_free', 'filesystem', `the writable filesystems of ${where}`);
    const all = ratio.samples.length;
    const low = ratio.samples.filter((x) => num(x.value) < threshold).sort((a, b) => num(a.value) - num(b.value));
    const least = Math.min(...ratio.samples.map((x) => num(x.value)));
    const name = (x: (typeof low)[number]) => `${named(x.metric, ['mountpoint'])} (${percent(num(x.value))} of inodes free)`;
    const evidence = [
      evidenceOf(
        ratio,
        'metric',
        listedSamples(ctx, ratio.samples, 'inodes_free_ratio', (v) => v < threshold, 'lowest', { threshold }),
        low.length > 0
          ? `${low.length} of ${all} filesystems ${low.length === 1 ? 'has' : 'have'} less than ${percent(threshold)} of ${low.length === 1 ? 'its' : 'their'} inodes free: ${listed(low.map(name))}.`
          : `${all === 1 ? 'The one filesystem has' : `All ${all} filesystems have`} at least ${percent(threshold)} of ${all === 1 ? 'its' : 'their'} inodes free (least: ${percent(least)}).`,
      ),
    ];
    if (low.length > 0)
      return {
        verdict: 'holds',
        reason: `less than ${percent(threshold)} of inodes free on ${listed(low.map(name))} (${where}): no file can be created there once they run out, whatever the free bytes`,
        evidence,
        subjects: [...new Set(low.map((x) => x.metric.instance ?? named(x.metric, ['mountpoint'])))],
        verification: { cause: ID, expect: 'ruled_out' },
      };
    return {
      verdict: 'ruled_out',
      reason: `${all === 1 ? 'the one writable filesystem' : `all ${all} writable filesystems`} of ${where} ${all === 1 ? 'has' : 'have'} at least ${percent(threshold)} of ${all === 1 ? 'its' : 'their'} inodes free (least: ${percent(least)})`,
      evidence,
    };
  },
};
