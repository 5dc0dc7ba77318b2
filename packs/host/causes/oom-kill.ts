import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { listedSamples, missing, named, placeNode, sinceOpening } from '../node.ts';

const ID = 'host/oom-kill';

/** A count of OOM kills for a sentence: `increase` extrapolates, so at least 1 once it moved. */
const kills = (v: number) => Math.max(1, Math.round(v));

/**
 * `host/oom-kill`: the kernel of a host of the service killed processes for lack of memory (the
 * OOM killer) during the episode or in the `lookback` before it opened: node_exporter's
 * `node_vmstat_oom_kill` counter (vmstat collector, kernel 4.13 and later) increased. A counter
 * that is merely there (kills before the window, a new exporter) does not hold. Memory that ran
 * low without a kill is `prometheus/memory-pressure`'s; this cause explains it on the same host
 * (the kill is what freed the memory), see README.md.
 */
export const oomKill: CauseDefinition = {
  id: ID,
  title: 'Processes killed for lack of memory (OOM)',
  specificity: 62,
  explains: ['prometheus/memory-pressure'],
  applies: {
    alerts: [
      'HostOomKillDetected',
      'HostOutOfMemory',
      'HostMemory*',
      'NodeMemory*',
      'NodeOutOfMemory',
      'OOM*',
      'Oom*',
      'KubeMemory*',
      'ContainerMemory*',
      'Memory*',
    ],
    technologies: ['jvm', 'java', 'redis', 'memcached', 'elasticsearch', 'opensearch'],
  },
  reads: ['metrics'],
  settings: { lookback: '15m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { count, evidenceOf, listed, num, overAll } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const lookback = set.duration('lookback');
    const placed = await placeNode(ctx, set.problem());
    if (!placed.ok) return placed.answer;
    const { p, where } = placed;
    const { range, since } = sinceOpening(ctx, lookback.s);

    const increase = await ctx.metrics.query(overAll(p, (s) => `increase(node_vmstat_oom_kill{${s}}[${range}])`));
    if (increase.samples.length === 0) return missing('node_vmstat_oom_kill', 'vmstat', where);
    const killed = increase.samples.filter((x) => num(x.value) > 0).sort((a, b) => num(b.value) - num(a.value));
    const hosts = increase.samples.length;
    const name = (x: (typeof killed)[number]) => `${named(x.metric)} (${count(kills(num(x.value)), 'OOM kill')})`;
    const evidence = [
      evidenceOf(
        increase,
        'metric',
        listedSamples(ctx, increase.samples, 'oom_kills', (v) => v > 0, 'highest', { since }),
        killed.length > 0
          ? `Since ${since}, the kernel killed processes for lack of memory on ${killed.length} of ${hosts} hosts: ${listed(killed.map(name))}.`
          : `Since ${since}, the kernel killed no process for lack of memory on ${hosts === 1 ? 'the one host' : `any of the ${hosts} hosts`} (node_vmstat_oom_kill did not increase).`,
      ),
    ];
    if (killed.length > 0)
      return {
        verdict: 'holds',
        reason: `the kernel killed processes for lack of memory since ${since} (${lookback.text} before the episode opened) on ${listed(killed.map(name))} (${where})`,
        evidence,
        subjects: killed.map((x) => x.metric.instance ?? named(x.metric)),
      };
    return {
      verdict: 'ruled_out',
      reason: `no OOM kill on ${where} since ${since} (${lookback.text} before the episode opened): node_vmstat_oom_kill did not increase`,
      evidence,
    };
  },
};
