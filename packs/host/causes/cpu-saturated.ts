import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { listedSamples, missing, named, placeNode } from '../node.ts';

const ID = 'host/cpu-saturated';

/**
 * `host/cpu-saturated`: a host of the service (node_exporter) kept its CPUs busy more than
 * `busy_ratio` of the window: the share of its CPU time spent neither idle, waiting for I/O, nor
 * stolen by the hypervisor, over all its CPUs (node-mixin's `instance:node_cpu_utilisation`).
 * The window is the setting's, cut to what the alert looked at (ctx.lib.prometheus.alertWindow).
 */
export const cpuSaturated: CauseDefinition = {
  id: ID,
  title: 'CPU saturated on the host',
  specificity: 40,
  applies: {
    alerts: [
      'HostHighCpuLoad',
      'HostCpu*',
      'NodeCPU*',
      'NodeCpu*',
      'NodeSystemSaturation',
      'NodeHighLoad*',
      'HostHighLoad*',
      'HighCpu*',
      'HighCPU*',
      'CPU*',
      'Cpu*',
    ],
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
    const window = alertWindow(ctx, 'node_cpu_seconds_total', setting);

    // A share of rates, not one minus a rate: a series younger than the window (a host rebooted
    // a minute ago) has every rate read low alike, and its share stays right.
    const cpu = (s: string, modes: string) => `sum without (cpu, mode) (rate(node_cpu_seconds_total{${s}${modes}}[${window.text}]))`;
    const busy = await ctx.metrics.query(overAll(p, (s) => `1 - ${cpu(s, ',mode=~"idle|iowait|steal"')} / ${cpu(s, '')}`));
    const hosts = busy.samples.filter((x) => !Number.isNaN(num(x.value)));
    if (hosts.length === 0) return missing('node_cpu_seconds_total', 'cpu', where);
    const hot = hosts.filter((x) => num(x.value) > threshold).sort((a, b) => num(b.value) - num(a.value));
    const busiest = Math.max(...hosts.map((x) => num(x.value)));
    const name = (x: (typeof hosts)[number]) => `${named(x.metric)} (${percent(num(x.value))} busy)`;
    const evidence = [
      evidenceOf(
        busy,
        'metric',
        listedSamples(ctx, busy.samples, 'busy', (v) => v > threshold, 'highest', { threshold, window: window.text }),
        hot.length > 0
          ? `Over ${window.text} (${window.why}), ${hot.length} of ${hosts.length} hosts kept their CPUs busy more than ${percent(threshold)} of the time: ${listed(hot.map(name))}.`
          : `Over ${window.text} (${window.why}), no host kept its CPUs busy more than ${percent(threshold)} of the time (busiest: ${percent(busiest)}).`,
      ),
    ];
    if (hot.length > 0)
      return {
        verdict: 'holds',
        reason: `CPU busy more than ${percent(threshold)} of the last ${window.text} on ${listed(hot.map(name))} (${where})`,
        evidence,
        subjects: hot.map((x) => x.metric.instance ?? named(x.metric)),
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, setting.s + 60) },
      };
    return {
      verdict: 'ruled_out',
      reason: `no host of ${where} kept its CPUs busy more than ${percent(threshold)} of the last ${window.text} (busiest: ${percent(busiest)})`,
      evidence,
    };
  },
};
