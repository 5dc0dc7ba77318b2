import { clip } from '../text.ts';
import type { Diagnosis } from './findings.model.ts';
import type { VerdictResult } from './run-check.ts';

/**
 * Orders verdicts as the episode shows them: causes that hold first, ranked by the pack's
 * specificity (a dependency's incident and a recent change rank above symptoms), then by how
 * directly the evidence speaks (`strength`), then by how much evidence there is; then the
 * unknowns (what could not be looked at), then what was ruled out.
 */
export function rank(verdicts: VerdictResult[]): VerdictResult[] {
  const group = (v: VerdictResult) => (v.verdict === 'holds' ? 0 : v.verdict === 'unknown' ? 1 : 2);
  const sorted = [...verdicts].sort(
    (a, b) =>
      group(a) - group(b) ||
      b.specificity - a.specificity ||
      b.strength - a.strength ||
      b.evidence.length - a.evidence.length ||
      (a.cause < b.cause ? -1 : a.cause > b.cause ? 1 : 0),
  );
  return explainedFirst(sorted);
}

/**
 * A cause that holds and explains another that holds on a common subject (a crash loop and the
 * target it keeps down) moves just above it: the cause before its symptom, whatever their
 * specificity. Applied once per pair, in order, so two causes explaining each other cannot loop.
 */
function explainedFirst(ranked: VerdictResult[]): VerdictResult[] {
  const out = [...ranked];
  for (const v of ranked) {
    if (v.verdict !== 'holds' || v.explains.length === 0 || v.subjects.length === 0) continue;
    const mine = new Set(v.subjects);
    const at = out.indexOf(v);
    const first = out.findIndex(
      (w, i) => i < at && w.verdict === 'holds' && v.explains.includes(w.cause) && !w.explains.includes(v.cause) && w.subjects.some((s) => mine.has(s)),
    );
    if (first === -1) continue;
    out.splice(at, 1);
    out.splice(first, 0, v);
  }
  return out;
}

/** The diagnosis of ranked verdicts: what holds, what is unknown, and the sentences a person reads first. */
export function diagnose(ranked: VerdictResult[], service: string, read?: { at: string; moment: string }): Diagnosis {
  const holds = ranked.filter((v) => v.verdict === 'holds');
  const unknown = ranked.filter((v) => v.verdict === 'unknown');
  const ruledOut = ranked.filter((v) => v.verdict === 'ruled_out');
  let summary: string;
  if (ranked.length === 0) summary = `No cause of the loaded packs applies to ${service}: nothing was checked.`;
  else if (holds.length > 0) {
    const top = holds[0]!;
    const others =
      holds.length > 1
        ? ` Also holding: ${holds
            .slice(1, 4)
            .map((v) => v.title)
            .join('; ')}${holds.length > 4 ? '; …' : ''}.`
        : '';
    summary = `Most likely: ${top.title} — ${top.reason}${/[.!?]$/.test(top.reason) ? '' : '.'}${others}`;
  } else if (unknown.length > 0) {
    // Causes that could not be checked are named as questions left open, never as findings.
    const open = unknown
      .slice(0, 3)
      .map((v) => `${v.title} (${v.obstacle ?? 'an obstacle'})`)
      .join('; ');
    summary = `No checked cause holds (${ruledOut.length} ruled out). Not known, as ${unknown.length === 1 ? 'it' : `${unknown.length} causes`} could not be checked: ${open}${unknown.length > 3 ? '; …' : ''}.`;
  } else summary = `All ${ruledOut.length} checked causes are ruled out: the cause is none the packs know.`;
  return { holds: holds.map((v) => v.cause), unknown: unknown.map((v) => v.cause), summary: clip(summary, 1000, '…'), ...read };
}
