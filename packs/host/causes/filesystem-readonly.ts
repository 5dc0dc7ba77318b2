import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { listedSamples, missing, named, placeNode, regexProblem } from '../node.ts';

const ID = 'host/filesystem-readonly';

/**
 * `host/filesystem-readonly`: a filesystem of the service's hosts (node_exporter) that is of a
 * writable type (`fstypes`: ext4, xfs, btrfs, tmpfs, NFS, ...) is mounted read-only: what ext4's
 * `errors=remount-ro` does after an I/O error, and what a full SAN path or a failing disk makes.
 * Read-only by design (squashfs, iso9660, a snap) is not of a writable type; mount points an
 * operator keeps read-only on purpose are left out with `ignore_mountpoints`.
 */
export const filesystemReadonly: CauseDefinition = {
  id: ID,
  title: 'Filesystem mounted read-only',
  specificity: 70,
  applies: {
    alerts: ['NodeFilesystem*', 'HostFilesystem*', 'Filesystem*', 'ReadOnly*', 'HostOutOfDiskSpace', 'HostDisk*', 'Disk*'],
    labels: ['mountpoint=~".+"'],
  },
  reads: ['metrics'],
  settings: { fstypes: 'ext[234]|xfs|btrfs|zfs|f2fs|jfs|reiserfs|vfat|tmpfs|nfs4?|cifs|ceph', ignore_mountpoints: '' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { evidenceOf, listed, num, overAll, quote } = ctx.lib.prometheus;
    const placed = await placeNode(ctx, regexProblem(ctx, 'fstypes') ?? regexProblem(ctx, 'ignore_mountpoints', true));
    if (!placed.ok) return placed.answer;
    const { p, where } = placed;
    const types = ctx.settings.fstypes as string;
    const ignored = ctx.settings.ignore_mountpoints as string;

    const matchers = (s: string) => `${s},fstype=~${quote(types)}${ignored === '' ? '' : `,mountpoint!~${quote(ignored)}`}`;
    const ro = await ctx.metrics.query(overAll(p, (s) => `node_filesystem_readonly{${matchers(s)}}`));
    if (ro.samples.length === 0) return missing('node_filesystem_readonly', 'filesystem', `the filesystems of a writable type (${types}) of ${where}`);
    const all = ro.samples.length;
    const readOnly = ro.samples.filter((x) => num(x.value) === 1);
    const name = (x: (typeof readOnly)[number]) => `${named(x.metric, ['mountpoint'])} (${x.metric.fstype ?? '?'} on ${x.metric.device ?? '?'})`;
    const evidence = [
      evidenceOf(
        ro,
        'metric',
        listedSamples(ctx, ro.samples, 'readonly', (v) => v === 1, 'highest', { fstypes: types, ignore_mountpoints: ignored }),
        readOnly.length > 0
          ? `${readOnly.length} of ${all} filesystems of a writable type ${readOnly.length === 1 ? 'is' : 'are'} mounted read-only: ${listed(readOnly.map(name))}.`
          : `${all === 1 ? 'The one filesystem' : `All ${all} filesystems`} of a writable type ${all === 1 ? 'is' : 'are'} mounted read-write.`,
      ),
    ];
    if (readOnly.length > 0)
      return {
        verdict: 'holds',
        reason: `${listed(readOnly.map(name))} ${readOnly.length === 1 ? 'is' : 'are'} mounted read-only (${where}): nothing can be written there`,
        evidence,
        subjects: [...new Set(readOnly.map((x) => x.metric.instance ?? named(x.metric, ['mountpoint'])))],
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    return {
      verdict: 'ruled_out',
      reason: `${all === 1 ? 'the one filesystem' : `all ${all} filesystems`} of a writable type of ${where} ${all === 1 ? 'is' : 'are'} mounted read-write`,
      evidence,
    };
  },
};
