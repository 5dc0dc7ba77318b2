import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';

const ID = 'prometheus/restarts';

/**
 * `prometheus/restarts`: a process of the service that was already running started again during
 * the episode, or in the `lookback` before it opened (a crash loop that raised the alert).
 * Decided by one query, `changes(process_start_time_seconds{…}[<lookback before the opening to
 * the check's moment>])`: a process whose start time changed inside the window restarted. The
 * first start of a new or redeployed process (a series that appears inside the window) has no
 * change and is not a restart. The evidence is exactly that query, so re-running it at the
 * check's moment gives the verdict's numbers.
 */
export const restarts: CauseDefinition = {
  id: ID,
  title: 'Process restarted',
  specificity: 55,
  // Between the restarts of a crash loop the target is down: the restarts are the cause.
  explains: ['prometheus/target-down'],
  applies: { always: true },
  reads: ['metrics'],
  settings: { lookback: '15m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { MAX_SERIES, count, describedAll, evidenceOf, labelsOf, listed, num, overAll, place, seriesName } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const lookback = set.duration('lookback');
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;
    const where = describedAll(p);

    const at = Date.parse(ctx.at);
    const since = Date.parse(ctx.episode.opened_at) - lookback.s * 1000;
    const range = `${Math.max(1, Math.ceil((at - since) / 1000))}s`;
    const sinceIso = new Date(since).toISOString();
    const changed = await ctx.metrics.query(overAll(p, (s) => `changes(process_start_time_seconds{${s}}[${range}])`));
    if (changed.samples.length === 0)
      return { verdict: 'unknown', obstacle: "the data isn't there", reason: `no process_start_time_seconds series for ${where}` };
    const rows = changed.samples
      .map((s) => ({ labels: labelsOf(s.metric), name: seriesName(s.metric), instance: s.metric.instance ?? seriesName(s.metric), changes: num(s.value) }))
      .sort((a, b) => b.changes - a.changes);
    const moved = rows.filter((r) => r.changes >= 1);
    const evidence = [
      evidenceOf(
        changed,
        'metric',
        {
          since: sinceIso,
          restarted: moved.length,
          total: rows.length,
          processes: rows.slice(0, MAX_SERIES).map(({ labels, changes }) => ({ labels, changes })),
        },
        moved.length > 0
          ? `Since ${sinceIso}, ${moved.length} of ${rows.length} processes started again: ${listed(moved.map((r) => `${r.name} (${count(r.changes, 'restart')})`))}.`
          : `Since ${sinceIso}, ${rows.length === 1 ? 'the one process' : `none of the ${rows.length} processes`} ${rows.length === 1 ? 'did not start again' : 'started again'} (process_start_time_seconds did not change; a process first seen in the window is a first start, not a restart).`,
      ),
    ];
    if (moved.length > 0)
      return {
        verdict: 'holds',
        reason: `${count(moved.length, 'process', 'processes')} of ${where} started again since ${sinceIso} (${lookback.text} before the episode opened): ${listed(moved.map((r) => `${r.name}, ${count(r.changes, 'restart')}`))}`,
        evidence,
        subjects: moved.map((r) => r.instance),
      };
    return {
      verdict: 'ruled_out',
      reason: `no process of ${where} started again since ${sinceIso} (${lookback.text} before the episode opened): ${count(rows.length, 'process', 'processes')}, process_start_time_seconds unchanged`,
      evidence,
    };
  },
};
