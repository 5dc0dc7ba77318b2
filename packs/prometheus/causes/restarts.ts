import type { CauseDefinition, CheckAnswer, CheckContext, EvidenceInput, MetricSample } from '../../../host/plugins/contract.ts';
import { described, place } from '../lib/place.ts';
import { num } from '../lib/promql.ts';
import { count, evidenceOf, labelsOf, listed, MAX_SERIES, seriesName } from '../lib/series.ts';
import { Settings } from '../lib/settings.ts';

const ID = 'prometheus/restarts';

/** A process start time (unix seconds) as ISO 8601, or null when it is not a time. */
const iso = (unix: number): string | null => (Number.isFinite(unix) && unix > 0 ? new Date(Math.round(unix * 1000)).toISOString() : null);

/**
 * `prometheus/restarts`: a process of the service started during the episode, or in the
 * `lookback` before it opened (a crash loop that raised the alert). Reads, over the window from
 * `lookback` before the opening to the check's moment, how often `process_start_time_seconds`
 * changed (`changes`) and its latest value (`max_over_time`): a change, or a start time inside
 * the window (a process whose series is new, such as a replaced pod), is a restart.
 */
export const restarts: CauseDefinition = {
  id: ID,
  title: 'Process restarted',
  specificity: 55,
  applies: { always: true },
  reads: ['metrics'],
  settings: { lookback: '15m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const set = new Settings(ctx);
    const lookback = set.duration('lookback');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;

    const at = Date.parse(ctx.at);
    const since = Date.parse(ctx.episode.opened_at) - lookback.s * 1000;
    const range = `${Math.max(1, Math.ceil((at - since) / 1000))}s`;
    const sinceIso = new Date(since).toISOString();
    const evidence: EvidenceInput[] = [];
    const restarted: string[] = [];
    const steady: string[] = [];
    const missing: string[] = [];
    for (const sel of p.selectors) {
      const changed = await ctx.metrics.query(`changes(process_start_time_seconds{${sel}}[${range}])`);
      const latest = await ctx.metrics.query(`max_over_time(process_start_time_seconds{${sel}}[${range}])`);
      if (latest.samples.length === 0) {
        missing.push(described(p, sel));
        continue;
      }
      const key = (m: Record<string, string>) => JSON.stringify(Object.entries(labelsOf(m)).sort());
      const changes = new Map(changed.samples.map((s) => [key(s.metric), num(s.value)]));
      const rows = latest.samples.map((s: MetricSample) => {
        const n = changes.get(key(s.metric)) ?? 0;
        const started = num(s.value);
        return { labels: labelsOf(s.metric), name: seriesName(s.metric), changes: n, started_at: iso(started), inWindow: started * 1000 >= since };
      });
      const moved = rows.filter((r) => r.changes > 0 || r.inWindow);
      restarted.push(
        ...moved.map((r) => `${r.name} (started ${r.started_at ?? '?'}${r.changes > 0 ? `, ${count(r.changes, 'change')} of its start time` : ''})`),
      );
      if (moved.length === 0) steady.push(`${count(rows.length, 'process', 'processes')} of ${described(p, sel)}`);
      const shown = [...moved, ...rows.filter((r) => !moved.includes(r))].slice(0, MAX_SERIES);
      evidence.push(
        evidenceOf(
          changed,
          'metric',
          {
            since: sinceIso,
            restarted: moved.length,
            total: rows.length,
            processes: shown.map(({ labels, changes, started_at }) => ({ labels, changes, started_at })),
          },
          moved.length > 0
            ? `Since ${sinceIso}, ${moved.length} of ${rows.length} processes of {${sel}} started: ${listed(moved.map((r) => `${r.name} at ${r.started_at ?? '?'}`))}.`
            : `Since ${sinceIso}, ${rows.length === 1 ? 'the one process' : `none of the ${rows.length} processes`} of {${sel}} ${rows.length === 1 ? 'did not restart' : 'restarted'} (process_start_time_seconds did not change).`,
        ),
        evidenceOf(
          latest,
          'metric',
          { since: sinceIso, started: shown.map(({ labels, started_at }) => ({ labels, started_at })) },
          `Latest start times of {${sel}}: ${listed(rows.map((r) => `${r.name} ${r.started_at ?? '?'}`))}.`,
        ),
      );
    }
    if (evidence.length === 0)
      return { verdict: 'unknown', obstacle: "the data isn't there", reason: `no process_start_time_seconds series for ${listed(missing)}` };
    const also = missing.length > 0 ? ` (no process_start_time_seconds series for ${listed(missing)})` : '';
    if (restarted.length > 0)
      return {
        verdict: 'holds',
        reason: `${count(restarted.length, 'process', 'processes')} started since ${sinceIso} (${lookback.text} before the episode opened): ${listed(restarted)}${also}`,
        evidence,
      };
    return {
      verdict: 'ruled_out',
      reason: `no process restarted since ${sinceIso} (${lookback.text} before the episode opened): ${listed(steady)}${also}`,
      evidence,
    };
  },
};
