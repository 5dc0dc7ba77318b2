import { scrubJson, scrubText } from '../scrub.ts';
import type { CheckMoment, EvidenceInput } from '../plugins/contract.ts';
import { clip } from '../text.ts';

/** The most one evidence item may take, as JSON. */
export const MAX_EVIDENCE_BYTES = 16 * 1024;
/** The most evidence items one verdict keeps. */
export const MAX_EVIDENCE_PER_VERDICT = 20;

/**
 * Which moment an evidence item was read at: the run's own (`opening`, `newest_signal`, `asked`,
 * `now`), `now` for a read of the present made while the check ran (a health URL), or `stated`
 * for another moment the check named (the end of a window it chose).
 */
export type EvidenceMoment = CheckMoment | 'stated';

/** An evidence item as it is stored and answered (its id and cause are added when it is recorded). */
export type Evidence = EvidenceInput & { moment: EvidenceMoment };

/** The moment of an item read at `at` by a check of a run at `run` that ran between `fromMs` and `toMs` (wall clock). */
export function evidenceMoment(at: string, run: { at: string; moment: CheckMoment }, fromMs: number, toMs: number): EvidenceMoment {
  if (at === run.at) return run.moment;
  const t = Date.parse(at);
  return t >= fromMs - 1000 && t <= toMs + 1000 ? 'now' : 'stated';
}

/**
 * A check's evidence item made safe to keep: every field of the right type, text clipped, the
 * connectors' secrets blanked, and at most 16 KiB in all (a larger `observed` is replaced by a
 * note saying how large it was). Null when it is not an evidence item at all.
 */
export function cleanEvidence(raw: unknown, secrets: string[], fallbackAt: string): Evidence | null {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return null;
  const r = raw as Record<string, unknown>;
  const text = (v: unknown, max: number, dflt = '') => clip(scrubText(typeof v === 'string' ? v : dflt, secrets), max, '…');
  const at = typeof r.at === 'string' && !Number.isNaN(Date.parse(r.at)) ? new Date(Date.parse(r.at)).toISOString() : fallbackAt;
  const item: Evidence = {
    source: text(r.source, 200, 'unknown'),
    kind: text(r.kind, 40, 'reading'),
    query: text(r.query, 4000),
    at,
    observed: plainJson(r.observed, secrets),
    excerpt: text(r.excerpt, 2000),
    moment: 'stated',
  };
  const size = Buffer.byteLength(JSON.stringify(item));
  if (size > MAX_EVIDENCE_BYTES) item.observed = { omitted: `the observed value was ${size} bytes; at most ${MAX_EVIDENCE_BYTES} are kept` };
  return item;
}

/** Plain JSON of a value (functions, cycles, undefined dropped), scrubbed; null when not serialisable or too deep. */
function plainJson(v: unknown, secrets: string[]): unknown {
  if (v === undefined) return null;
  // A 50 MB answer is measured without serialising it (that would stall the host for seconds).
  const size = roughSize(v, MAX_EVIDENCE_BYTES * 4);
  if (size > MAX_EVIDENCE_BYTES * 4)
    return { omitted: `the observed value was larger than ${MAX_EVIDENCE_BYTES * 4} characters; at most ${MAX_EVIDENCE_BYTES} bytes are kept` };
  try {
    const text = JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
    if (text === undefined) return null;
    // A 50 MB answer is not parsed back only to be dropped.
    if (text.length > MAX_EVIDENCE_BYTES * 4)
      return { omitted: `the observed value was ${text.length} characters; at most ${MAX_EVIDENCE_BYTES} bytes are kept` };
    return scrubJson(JSON.parse(text) as unknown, secrets);
  } catch {
    return null;
  }
}

/** About how many characters `v` takes as JSON, counting no further than just past `limit`. */
function roughSize(v: unknown, limit: number): number {
  let total = 0;
  const seen = new Set<object>();
  const stack: unknown[] = [v];
  while (stack.length > 0 && total <= limit) {
    const x = stack.pop();
    if (typeof x === 'string') total += x.length + 2;
    else if (typeof x === 'object' && x !== null) {
      if (seen.has(x)) continue;
      seen.add(x);
      for (const [k, y] of Object.entries(x)) {
        total += k.length + 4;
        stack.push(y);
        if (total > limit) break;
      }
    } else total += 8;
  }
  return total;
}
