import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { REDIS } from '../applies.ts';

const ID = 'redis/replication-broken';

/**
 * `redis/replication-broken`: a replica of the service has had no link to a master for the whole
 * of `down_for` (`max_over_time(redis_master_link_up[down_for]) == 0`, per replica whatever its
 * master: a replica pointed at another master starts a series of its own): a link down for a
 * moment (a full resync at start, a blip) is not broken replication. One query, the evidence;
 * masters have no such series and are not judged. See README.md.
 */
export const replicationBroken: CauseDefinition = {
  id: ID,
  title: 'Redis replication broken',
  specificity: 60,
  applies: REDIS,
  reads: ['metrics'],
  settings: { down_for: '1m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { count, describedAll, evidenceOf, listed, num, overAll, place, samplesObserved, seriesName } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const downFor = set.duration('down_for');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const where = describedAll(placed.placement);
    const r = await ctx.metrics.query(
      overAll(placed.placement, (s) => `max without (master_host, master_port) (max_over_time(redis_master_link_up{${s}}[${downFor.text}]))`),
    );
    if (r.samples.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no redis_master_link_up series for ${where}: no replica is linked (the exporter of a master has none), so replication cannot be judged`,
      };
    const name = (m: Record<string, string>) => seriesName(m);
    const broken = r.samples.filter((s) => num(s.value) === 0);
    const evidence = [
      evidenceOf(
        r,
        'metric',
        samplesObserved(broken.length > 0 ? broken : r.samples, { replicas: r.samples.length, broken: broken.length, down_for: downFor.text }),
        broken.length > 0
          ? `Over the last ${downFor.text}, ${broken.length} of ${r.samples.length} replicas never had their link to the master up: ${listed(broken.map((s) => name(s.metric)))}.`
          : `Over the last ${downFor.text}, every replica (${r.samples.length}) had its link to the master up at some point.`,
      ),
    ];
    if (broken.length > 0)
      return {
        verdict: 'holds',
        reason: `${count(broken.length, 'replica')} of ${where} lost ${broken.length === 1 ? 'its' : 'their'} link to the master for all of the last ${downFor.text}: ${listed(broken.map((s) => name(s.metric)))}`,
        evidence,
        subjects: broken.map((s) => s.metric.instance ?? seriesName(s.metric)),
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, downFor.s + 60) },
      };
    return { verdict: 'ruled_out', reason: `every replica of ${where} had its link to the master up within the last ${downFor.text}`, evidence };
  },
};
