import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { listedSamples, missing, named, placeNode } from '../node.ts';

const ID = 'host/network-errors';

/**
 * `host/network-errors`: a network interface of the service's hosts (node_exporter's netdev)
 * dropped or failed more than `error_ratio` of the packets it received and sent over the window
 * (receive and transmit errors and drops over packets, counted with the packets lost). A share,
 * not a count: a busy interface drops a few frames it has no use for (LLDP, another protocol)
 * all day. The window is the setting's, cut to what the alert looked at.
 */
export const networkErrors: CauseDefinition = {
  id: ID,
  title: 'Network errors or drops on the host',
  specificity: 45,
  applies: { alerts: ['NodeNetwork*', 'HostNetwork*', 'HostUnusualNetwork*', 'NodeBonding*', 'Network*'] },
  reads: ['metrics'],
  settings: { error_ratio: 0.01, window: '5m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { alertWindow, evidenceOf, listed, num, overAll, percent } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const threshold = set.number('error_ratio', 0, 1);
    const setting = set.duration('window');
    const placed = await placeNode(ctx, set.problem());
    if (!placed.ok) return placed.answer;
    const { p, where } = placed;
    const window = alertWindow(ctx, 'node_network_', setting);

    const r = (s: string, what: string) => `rate(node_network_${what}_total{${s}}[${window.text}])`;
    // Over every packet tried: a dropped packet is not always counted among the packets too.
    const lost = (s: string) => ['receive_errs', 'receive_drop', 'transmit_errs', 'transmit_drop'].map((w) => r(s, w)).join(' + ');
    const share = await ctx.metrics.query(overAll(p, (s) => `(${lost(s)}) / (${r(s, 'receive_packets')} + ${r(s, 'transmit_packets')} + ${lost(s)})`));
    if (share.samples.length === 0) return missing('node_network_receive_packets_total', 'netdev', where);
    const moving = share.samples.filter((x) => !Number.isNaN(num(x.value)));
    const bad = moving.filter((x) => num(x.value) > threshold).sort((a, b) => num(b.value) - num(a.value));
    const worst = moving.length === 0 ? 0 : Math.max(...moving.map((x) => num(x.value)));
    const name = (x: (typeof bad)[number]) => `${named(x.metric, ['device'])} (${percent(num(x.value))} of packets)`;
    const idle = share.samples.length - moving.length;
    const evidence = [
      evidenceOf(
        share,
        'metric',
        listedSamples(ctx, share.samples, 'lost_ratio', (v) => v > threshold, 'highest', { threshold, window: window.text }),
        bad.length > 0
          ? `Over ${window.text} (${window.why}), ${bad.length} of ${share.samples.length} interfaces dropped or failed more than ${percent(threshold)} of their packets: ${listed(bad.map(name))}.`
          : `Over ${window.text} (${window.why}), no interface dropped or failed more than ${percent(threshold)} of its packets (worst: ${percent(worst)}${idle > 0 ? `; ${idle} moved no packet` : ''}).`,
      ),
    ];
    if (bad.length > 0)
      return {
        verdict: 'holds',
        reason: `packets dropped or in error over the last ${window.text} on ${listed(bad.map(name))} (${where})`,
        evidence,
        subjects: [...new Set(bad.map((x) => x.metric.instance ?? named(x.metric, ['device'])))],
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, setting.s + 60) },
      };
    return {
      verdict: 'ruled_out',
      reason: `no interface of ${where} dropped or failed more than ${percent(threshold)} of its packets over the last ${window.text} (worst: ${percent(worst)})`,
      evidence,
    };
  },
};
