import type { CheckAnswer, CheckContext, Placement } from '../../host/plugins/contract.ts';
import { proxyName } from './tier.ts';

/** What a 5xx cause reads and how it words it. */
export interface ShareQuestion {
  id: string;
  /** The metric whose window the alert's own expression may cut (ctx.lib.prometheus.alertWindow). */
  metric: string;
  /** The share per HAProxy backend (`sum by (instance, proxy) …`), over the placement's selector and the window. */
  expr: (selector: string, window: string) => string;
  /** What the share is, for people: "of the responses HAProxy made itself". */
  what: string;
  /** Why a share above the threshold is this cause: appended to the holding reason. */
  meaning: string;
}

/**
 * A share per HAProxy backend (`proxy`) over the window, against the `threshold` setting: holds
 * when a backend is above it, ruled out when every backend with requests is at or under it,
 * unknown when there is no series or no request in the window. One query, the evidence.
 */
export async function shareCheck(ctx: CheckContext, p: Placement, q: ShareQuestion): Promise<CheckAnswer> {
  const { alertWindow, describedAll, evidenceOf, labelsOf, listed, num, overAll, percent, rounded, MAX_SERIES } = ctx.lib.prometheus;
  const set = ctx.lib.prometheus.settings(ctx);
  const threshold = set.number('threshold', 0, 1);
  const setting = set.duration('window');
  const bad = set.problem();
  if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
  const where = describedAll(p);
  const window = alertWindow(ctx, q.metric, setting);
  const r = await ctx.metrics.query(overAll(p, (s) => q.expr(s, window.text)));
  if (r.samples.length === 0)
    return { verdict: 'unknown', obstacle: "the data isn't there", reason: `no HAProxy ${q.metric} series for ${where} (HAProxy's built-in exporter)` };
  const instances = new Set(r.samples.map((s) => s.metric.instance)).size;
  const rows = r.samples
    .map((s) => ({ metric: s.metric, name: proxyName(s.metric, instances), share: Math.max(0, num(s.value)) }))
    .filter((x) => Number.isFinite(x.share))
    .sort((a, b) => b.share - a.share);
  if (rows.length === 0)
    return { verdict: 'unknown', obstacle: "the data isn't there", reason: `no request reached the HAProxy backends of ${where} in the last ${window.text}` };
  const above = rows.filter((x) => x.share > threshold);
  const evidence = [
    evidenceOf(
      r,
      'metric',
      {
        threshold,
        window: window.text,
        backends: rows.slice(0, MAX_SERIES).map((x) => ({ labels: labelsOf(x.metric), share: rounded(x.share) })),
        total: rows.length,
        above: above.length,
      },
      `Over ${window.text} (${window.why}), 5xx ${q.what}: ${listed(rows.map((x) => `${x.name} ${percent(x.share)}`))} (threshold ${percent(threshold)}).`,
    ),
  ];
  if (above.length > 0)
    return {
      verdict: 'holds',
      reason: `5xx ${q.what} over ${window.text} are above ${percent(threshold)} for ${listed(above.map((x) => `${x.name} (${percent(x.share)})`))}: ${q.meaning} (${where})`,
      evidence,
      subjects: above.map((x) => x.metric.proxy ?? x.name),
      verification: { cause: q.id, expect: 'ruled_out', after_s: Math.min(3600, setting.s + 60) },
    };
  return {
    verdict: 'ruled_out',
    reason: `5xx ${q.what} over ${window.text} are at or under ${percent(threshold)} for every backend of ${where} (highest ${rows[0]!.name}, ${percent(rows[0]!.share)})`,
    evidence,
  };
}
