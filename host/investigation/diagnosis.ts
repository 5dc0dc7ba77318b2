import { clip } from '../text.ts';
import type { Diagnosis } from './findings.repo.ts';
import type { VerdictResult } from './run-check.ts';

/**
 * Orders verdicts as the episode shows them: causes that hold first, ranked by the pack's
 * specificity (a dependency's incident and a recent change rank above symptoms), then by how
 * directly the evidence speaks (`strength`), then by how much evidence there is; then the
 * unknowns (what could not be looked at), then what was ruled out.
 */
export function rank(verdicts: VerdictResult[]): VerdictResult[] {
  const group = (v: VerdictResult) => (v.verdict === 'holds' ? 0 : v.verdict === 'unknown' ? 1 : 2);
  return [...verdicts].sort(
    (a, b) =>
      group(a) - group(b) ||
      b.specificity - a.specificity ||
      b.strength - a.strength ||
      b.evidence.length - a.evidence.length ||
      (a.cause < b.cause ? -1 : a.cause > b.cause ? 1 : 0),
  );
}

/** The diagnosis of ranked verdicts: what holds, what is unknown, and the sentences a person reads first. */
export function diagnose(ranked: VerdictResult[], service: string): Diagnosis {
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
  } else if (unknown.length > 0)
    summary = `No checked cause holds (${ruledOut.length} ruled out); ${unknown.length} could not be checked, the first because ${unknown[0]!.obstacle ?? 'of an obstacle'}: ${unknown[0]!.title}.`;
  else summary = `All ${ruledOut.length} checked causes are ruled out: the cause is none the packs know.`;
  return { holds: holds.map((v) => v.cause), unknown: unknown.map((v) => v.cause), summary: clip(summary, 1000, '…') };
}
