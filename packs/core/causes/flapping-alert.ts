import type { CauseDefinition, CheckAnswer, CheckContext, CheckSignal, EvidenceInput } from '../../../host/plugins/contract.ts';

/** Signals listed in the evidence, one item each. */
const MAX_LISTED = 10;
/** A label name as Alertmanager takes it in a matcher (flattened dotted keys are not labels there). */
const LABEL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Labels the host stamps (the source word, the connector that polled it), which the alerting tool never had. */
const HOST_LABELS = new Set(['siem', 'poller']);

/**
 * `core/flapping-alert`: an alert of the episode fires and clears often (intake's baseline says
 * it flaps, or it fired at least `firings_7d` times in 7 days): noise, not an incident. Remedy: a
 * silence of that alert for `silence_s`, naming the alert (its fingerprint) and its every label;
 * the host sends it only to the tool the alert came from. See README.md.
 */
export const flappingAlert: CauseDefinition = {
  id: 'core/flapping-alert',
  title: 'Flapping alert',
  specificity: 20,
  applies: { always: true },
  reads: [],
  settings: { firings_7d: 10, silence_s: 3600 },
  check,
};

function check(ctx: CheckContext): CheckAnswer {
  if (ctx.signals.length === 0)
    return {
      verdict: 'unknown',
      obstacle: "the data isn't there",
      reason: "No alert is part of this check: flapping is judged from an alert's firing history.",
    };
  const t = ctx.settings.firings_7d;
  const threshold = typeof t === 'number' && t > 0 ? t : 10;
  const d = ctx.settings.silence_s;
  const duration = typeof d === 'number' && d > 0 ? Math.round(d) : 3600;
  const flaps = (s: CheckSignal) => s.baseline.flapping || s.baseline.firings_7d >= threshold;
  const byFirings = [...ctx.signals].sort((a, b) => Number(flaps(b)) - Number(flaps(a)) || b.baseline.firings_7d - a.baseline.firings_7d);
  const evidence: EvidenceInput[] = byFirings.slice(0, MAX_LISTED).map((s) => ({
    source: 'signals',
    kind: 'baseline',
    query: `firing history of ${matchers(s)}`,
    at: ctx.at,
    observed: { fingerprint: s.fingerprint, name: s.name, ...s.baseline },
    excerpt: `${s.name} fired ${s.baseline.firings_7d} time${s.baseline.firings_7d === 1 ? '' : 's'} in 7 days (${s.baseline.firings_30d} in 30)${s.baseline.flapping ? '; intake marks it as flapping' : ''}.`,
  }));
  const top = byFirings[0]!;
  if (!flaps(top)) {
    return {
      verdict: 'ruled_out',
      reason: `No alert of the episode flaps: the most fired, ${top.name}, fired ${top.baseline.firings_7d} times in 7 days (it counts from ${threshold}).`,
      evidence,
    };
  }
  const why =
    top.baseline.firings_7d >= threshold
      ? `fired ${top.baseline.firings_7d} times in 7 days (it counts from ${threshold})`
      : `is marked as flapping by intake (fired ${top.baseline.firings_7d} times in 7 days)`;
  const others = byFirings.filter(flaps).length - 1;
  return {
    verdict: 'holds',
    reason: `${top.name} ${why}: it fires and clears on its own.${others > 0 ? ` ${others} more alert${others === 1 ? '' : 's'} of the episode flap${others === 1 ? 's' : ''}.` : ''}`,
    evidence,
    remedy: {
      action: 'silence',
      params: {
        alert: top.fingerprint,
        matchers: matchers(top),
        duration_s: duration,
        comment: `core/flapping-alert: ${top.name} fired ${top.baseline.firings_7d} times in 7 days`,
      },
      undo: 'expire the silence',
    },
  };
}

/**
 * The alert's identifying labels as a matcher list, `alertname="X",service="Y",...`: every label
 * of the alert (an Alertmanager alert is its label set) but those the host stamps, alertname first.
 */
export function matchers(s: CheckSignal): string {
  const labels: Array<[string, string]> = [['alertname', s.labels.alertname ?? s.name]];
  for (const k of Object.keys(s.labels).sort()) if (k !== 'alertname' && !HOST_LABELS.has(k) && LABEL_NAME.test(k)) labels.push([k, s.labels[k]!]);
  return labels.map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`).join(',');
}
