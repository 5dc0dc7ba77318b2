import type { CauseDefinition, CheckAnswer, CheckContext, EvidenceInput } from '../../../host/plugins/contract.ts';
import { listedSamples, missing, named, placeNode } from '../node.ts';

const ID = 'host/clock-unsynchronised';

/**
 * `host/clock-unsynchronised`: the clock of a host of the service is not kept in time. Two reads
 * of node_exporter's timex collector (the kernel's `adjtimex`), both evidence: the kernel's own
 * flag (`node_timex_sync_status` 0: no NTP or chrony has synchronised it), and its estimated
 * offset from the time source (`node_timex_offset_seconds`) beyond `max_offset_s`. Certificates
 * not yet valid, Kerberos and TOTP refusals, and logs out of order follow from either.
 */
export const clockUnsynchronised: CauseDefinition = {
  id: ID,
  title: 'Clock not synchronised',
  specificity: 50,
  applies: { alerts: ['NodeClock*', 'HostClock*', 'Clock*', 'Ntp*', 'NTP*', 'Chrony*', 'TimeSkew*'] },
  reads: ['metrics'],
  settings: { max_offset_s: 0.05 },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { evidenceOf, listed, num, overAll, seconds } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const maxOffset = set.number('max_offset_s', 0);
    const placed = await placeNode(ctx, set.problem());
    if (!placed.ok) return placed.answer;
    const { p, where } = placed;

    const sync = await ctx.metrics.query(overAll(p, (s) => `node_timex_sync_status{${s}}`));
    if (sync.samples.length === 0) return missing('node_timex_sync_status', 'timex', where);
    const offset = await ctx.metrics.query(overAll(p, (s) => `node_timex_offset_seconds{${s}}`));
    const unsynced = sync.samples.filter((x) => num(x.value) === 0);
    const off = offset.samples.filter((x) => Math.abs(num(x.value)) > maxOffset).sort((a, b) => Math.abs(num(b.value)) - Math.abs(num(a.value)));
    const hosts = sync.samples.length;
    const signed = (v: number) => `${v < 0 ? '-' : '+'}${seconds(Math.abs(v))}`;
    const evidence: EvidenceInput[] = [
      evidenceOf(
        sync,
        'metric',
        listedSamples(ctx, sync.samples, 'sync_status', (v) => v === 0, 'lowest', {}),
        unsynced.length > 0
          ? `${unsynced.length} of ${hosts} hosts say their clock is not synchronised (node_timex_sync_status 0): ${listed(unsynced.map((x) => named(x.metric)))}.`
          : `${hosts === 1 ? 'The one host says its' : `All ${hosts} hosts say their`} clock is synchronised (node_timex_sync_status 1).`,
      ),
      evidenceOf(
        offset,
        'metric',
        listedSamples(ctx, offset.samples, 'offset_seconds', (v) => Math.abs(v) > maxOffset, 'highest', { max_offset_s: maxOffset }),
        off.length > 0
          ? `${off.length} of ${offset.samples.length} hosts are off their time source by more than ${seconds(maxOffset)}: ${listed(off.map((x) => `${named(x.metric)} (${signed(num(x.value))})`))}.`
          : `No host is off its time source by more than ${seconds(maxOffset)}.`,
      ),
    ];
    const bad = [...new Set([...unsynced, ...off].map((x) => x.metric.instance ?? named(x.metric)))];
    if (bad.length > 0) {
      const parts = [
        ...(unsynced.length > 0 ? [`not synchronised on ${listed(unsynced.map((x) => named(x.metric)))}`] : []),
        ...(off.length > 0
          ? [`off its time source by more than ${seconds(maxOffset)} on ${listed(off.map((x) => `${named(x.metric)} (${signed(num(x.value))})`))}`]
          : []),
      ];
      return {
        verdict: 'holds',
        reason: `the clock is ${parts.join('; and ')} (${where})`,
        evidence,
        subjects: bad,
        verification: { cause: ID, expect: 'ruled_out', after_s: 120 },
      };
    }
    return {
      verdict: 'ruled_out',
      reason: `the clock of ${hosts === 1 ? 'the one host' : `all ${hosts} hosts`} of ${where} is synchronised, within ${seconds(maxOffset)} of its time source`,
      evidence,
    };
  },
};
