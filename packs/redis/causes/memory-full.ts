import type { CauseDefinition, CheckAnswer, CheckContext, EvidenceInput } from '../../../host/plugins/contract.ts';
import { REDIS } from '../applies.ts';

const ID = 'redis/memory-full';

/**
 * `redis/memory-full`: a Redis is at its `maxmemory` (used memory at `memory_ratio` of it or
 * more, at the check's moment) **and** in the window it evicted keys to stay under it, or refused
 * writes with OOM errors (its policy being `noeviction`, or nothing left to evict). Both
 * conditions decide, so the evidence is the queries of both. A Redis without maxmemory (0) has
 * no such limit: the host's memory is `prometheus/memory-pressure`'s. See README.md.
 */
export const memoryFull: CauseDefinition = {
  id: ID,
  title: 'Redis at maxmemory, keys evicted or writes refused',
  specificity: 65,
  applies: REDIS,
  reads: ['metrics'],
  settings: { memory_ratio: 0.9, window: '5m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { describedAll, evidenceOf, labelsOf, listed, num, overAll, percent, place, rounded, seriesName, MAX_SERIES } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const ratio = set.number('memory_ratio', 0, 1);
    const window = set.duration('window');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;
    const where = describedAll(p);
    const w = window.text;

    // One read after the other: the study paces a connector's reads one at a time.
    const used = await ctx.metrics.query(overAll(p, (s) => `redis_memory_used_bytes{${s}} / redis_memory_max_bytes{${s}}`));
    const evicted = await ctx.metrics.query(overAll(p, (s) => `increase(redis_evicted_keys_total{${s}}[${w}])`));
    const oom = await ctx.metrics.query(overAll(p, (s) => `increase(redis_errors_total{${s},err="OOM"}[${w}])`));
    if (used.samples.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no redis_memory_used_bytes series for ${where}: link the targets of its prometheus-redis-exporter`,
      };
    const key = (m: Record<string, string>) => m.instance ?? seriesName(m);
    const evictedBy = new Map(evicted.samples.map((s) => [key(s.metric), Math.round(num(s.value))]));
    const refusedBy = new Map(oom.samples.map((s) => [key(s.metric), Math.round(num(s.value))]));
    const rows = used.samples
      .map((s) => ({
        metric: s.metric,
        name: seriesName(s.metric),
        used: num(s.value),
        evicted: evictedBy.get(key(s.metric)) ?? 0,
        refused: refusedBy.get(key(s.metric)) ?? 0,
      }))
      .sort((a, b) => (Number.isFinite(b.used) ? b.used : -1) - (Number.isFinite(a.used) ? a.used : -1));
    const limited = rows.filter((r) => Number.isFinite(r.used));
    if (limited.length === 0)
      return {
        verdict: 'ruled_out',
        reason: `no Redis of ${where} has a maxmemory (redis_memory_max_bytes is 0): it cannot evict or refuse writes for want of memory`,
        evidence: [evidenceOf(used, 'metric', { instances: rows.length, with_maxmemory: 0 }, `No Redis of the service sets maxmemory (used / max is +Inf).`)],
      };
    const full = limited.filter((r) => r.used >= ratio && (r.evicted >= 1 || r.refused >= 1));
    const what = (r: (typeof rows)[number]) =>
      `${r.name} at ${percent(r.used)} of maxmemory${r.evicted >= 1 ? `, ${r.evicted} keys evicted` : ''}${r.refused >= 1 ? `, ${r.refused} writes refused (OOM)` : ''}`;
    const evidence: EvidenceInput[] = [
      evidenceOf(
        used,
        'metric',
        {
          memory_ratio: ratio,
          redis: limited.slice(0, MAX_SERIES).map((r) => ({ labels: labelsOf(r.metric), used_of_max: rounded(r.used) })),
          total: limited.length,
        },
        `Memory used against maxmemory: ${listed(limited.map((r) => `${r.name} ${percent(r.used)}`))} (threshold ${percent(ratio)}).`,
      ),
      evidenceOf(
        evicted,
        'metric',
        { window: w, redis: evicted.samples.slice(0, MAX_SERIES).map((s) => ({ labels: labelsOf(s.metric), evicted: Math.round(num(s.value)) })) },
        `Keys evicted over ${w}: ${evicted.samples.length === 0 ? 'no series' : listed(evicted.samples.map((s) => `${seriesName(s.metric)} ${Math.round(num(s.value))}`))}.`,
      ),
    ];
    if (oom.samples.length > 0)
      evidence.push(
        evidenceOf(
          oom,
          'metric',
          { window: w, redis: oom.samples.slice(0, MAX_SERIES).map((s) => ({ labels: labelsOf(s.metric), refused: Math.round(num(s.value)) })) },
          `Writes refused with OOM over ${w}: ${listed(oom.samples.map((s) => `${seriesName(s.metric)} ${Math.round(num(s.value))}`))}.`,
        ),
      );
    if (full.length > 0)
      return {
        verdict: 'holds',
        reason: `Redis of ${where} is at its maxmemory and had to evict or refuse in the last ${w}: ${listed(full.map(what))}`,
        evidence,
        subjects: full.map((r) => r.metric.instance ?? r.name),
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, window.s + 60) },
      };
    const top = limited[0]!;
    return {
      verdict: 'ruled_out',
      reason:
        top.used >= ratio
          ? `Redis of ${where} is near its maxmemory (${what(top)}) but evicted no key and refused no write in the last ${w}`
          : `every Redis of ${where} is under ${percent(ratio)} of its maxmemory (highest ${what(top)})`,
      evidence,
    };
  },
};
