import type { CauseDefinition, CheckAnswer, CheckContext, MetricSample } from '../../../host/plugins/contract.ts';
import { listedSamples, named, placeNode } from '../node.ts';

const ID = 'host/fd-exhausted';

/**
 * `host/fd-exhausted`: file descriptors near their limit, read twice, both evidence: for each
 * process of the service that exports the client libraries' process metrics, open descriptors
 * over its limit (`process_open_fds / process_max_fds`: "Too many open files" comes next); and for
 * each host (node_exporter's filefd collector), the kernel's allocated file handles over
 * `fs.file-max`. Holds when either is above `used_ratio`.
 */
export const fdExhausted: CauseDefinition = {
  id: ID,
  title: 'File descriptors near the limit',
  specificity: 58,
  applies: {
    alerts: ['NodeFileDescriptorLimit', 'HostFileDescriptor*', 'FileDescriptor*', 'FdExhaustion*', 'ProcessFd*', 'ProcessFileDescriptor*', 'TooManyOpenFiles*'],
  },
  reads: ['metrics'],
  settings: { used_ratio: 0.9 },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { count, evidenceOf, listed, num, overAll, percent } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const threshold = set.number('used_ratio', 0, 1);
    const placed = await placeNode(ctx, set.problem());
    if (!placed.ok) return placed.answer;
    const { p, where } = placed;

    const processes = await ctx.metrics.query(overAll(p, (s) => `process_open_fds{${s}} / process_max_fds{${s}}`));
    const kernel = await ctx.metrics.query(overAll(p, (s) => `node_filefd_allocated{${s}} / node_filefd_maximum{${s}}`));
    if (processes.samples.length === 0 && kernel.samples.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no process_open_fds nor node_filefd_allocated series for ${where}: the service's processes export neither the client libraries' process metrics, nor is its node_exporter (filefd collector) linked as a workload`,
      };
    const near = (xs: MetricSample[]) => xs.filter((x) => num(x.value) > threshold).sort((a, b) => num(b.value) - num(a.value));
    const procNear = near(processes.samples);
    const kernNear = near(kernel.samples);
    const name = (x: MetricSample) => `${named(x.metric)} (${percent(num(x.value))} used)`;
    const highest = (xs: MetricSample[]) => percent(Math.max(...xs.map((x) => num(x.value))));
    const evidence = [
      evidenceOf(
        processes,
        'metric',
        listedSamples(ctx, processes.samples, 'used_ratio', (v) => v > threshold, 'highest', { threshold }),
        processes.samples.length === 0
          ? 'No process of the service exports process_open_fds and process_max_fds.'
          : procNear.length > 0
            ? `${procNear.length} of ${processes.samples.length} processes use more than ${percent(threshold)} of their file descriptor limit: ${listed(procNear.map(name))}.`
            : `No process uses more than ${percent(threshold)} of its file descriptor limit (most: ${highest(processes.samples)}).`,
      ),
      evidenceOf(
        kernel,
        'metric',
        listedSamples(ctx, kernel.samples, 'used_ratio', (v) => v > threshold, 'highest', { threshold }),
        kernel.samples.length === 0
          ? 'No node_exporter of the service exports node_filefd_allocated (filefd collector).'
          : kernNear.length > 0
            ? `${kernNear.length} of ${kernel.samples.length} hosts have allocated more than ${percent(threshold)} of their file handles (fs.file-max): ${listed(kernNear.map(name))}.`
            : `No host has allocated more than ${percent(threshold)} of its file handles (most: ${highest(kernel.samples)}).`,
      ),
    ];
    if (procNear.length > 0 || kernNear.length > 0) {
      const parts = [
        ...(procNear.length > 0 ? [`processes at their descriptor limit: ${listed(procNear.map(name))}`] : []),
        ...(kernNear.length > 0 ? [`hosts at their file handle limit (fs.file-max): ${listed(kernNear.map(name))}`] : []),
      ];
      return {
        verdict: 'holds',
        reason: `file descriptors above ${percent(threshold)} of the limit on ${where}: ${parts.join('; ')}`,
        evidence,
        subjects: [...new Set([...procNear, ...kernNear].map((x) => x.metric.instance ?? named(x.metric)))],
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    }
    return {
      verdict: 'ruled_out',
      reason: `file descriptors of ${where} are at or below ${percent(threshold)} of their limits (${count(processes.samples.length, 'process', 'processes')}, ${count(kernel.samples.length, 'host')})`,
      evidence,
    };
  },
};
