import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { listedSamples, missing, named, placeNode, regexProblem } from '../node.ts';

const ID = 'host/systemd-unit-failed';

/**
 * `host/systemd-unit-failed`: a systemd unit on a host of the service is in the `failed` state
 * (node_exporter's systemd collector, which is off by default: `--collector.systemd`). `units`
 * narrows it to the service's own units (`orders.*\.service`); by default every unit counts.
 */
export const systemdUnitFailed: CauseDefinition = {
  id: ID,
  title: 'systemd unit failed',
  specificity: 60,
  applies: { alerts: ['NodeSystemd*', 'HostSystemd*', 'Systemd*', 'SystemdUnit*'] },
  reads: ['metrics'],
  settings: { units: '.+' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { evidenceOf, listed, num, overAll, quote } = ctx.lib.prometheus;
    const placed = await placeNode(ctx, regexProblem(ctx, 'units'));
    if (!placed.ok) return placed.answer;
    const { p, where } = placed;
    const units = ctx.settings.units as string;

    const state = await ctx.metrics.query(overAll(p, (s) => `node_systemd_unit_state{${s},state="failed",name=~${quote(units)}}`));
    if (state.samples.length === 0) return missing(`node_systemd_unit_state (units ${units})`, 'systemd', where);
    const failed = state.samples.filter((x) => num(x.value) === 1);
    const all = state.samples.length;
    const name = (x: (typeof failed)[number]) => `${x.metric.name ?? '?'} on ${named(x.metric)}`;
    const evidence = [
      evidenceOf(
        state,
        'metric',
        listedSamples(ctx, state.samples, 'failed', (v) => v === 1, 'highest', { units }),
        failed.length > 0
          ? `${failed.length} of ${all} units ${failed.length === 1 ? 'is' : 'are'} in the failed state: ${listed(failed.map(name))}.`
          : `None of the ${all} units is in the failed state.`,
      ),
    ];
    if (failed.length > 0)
      return {
        verdict: 'holds',
        reason: `systemd reports ${listed(failed.map(name))} failed (${where})`,
        evidence,
        subjects: [...new Set(failed.map((x) => x.metric.instance ?? named(x.metric)))],
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    return { verdict: 'ruled_out', reason: `none of the ${all} systemd units of ${where} matching ${units} is in the failed state`, evidence };
  },
};
