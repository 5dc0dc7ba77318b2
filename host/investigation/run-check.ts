import type { CheckAnswer, CheckContext, CheckMoment, Obstacle, Remedy, Verification } from '../plugins/contract.ts';
import { clip } from '../text.ts';
import type { Cause } from './catalogue.ts';
import { cleanEvidence, evidenceMoment, MAX_EVIDENCE_PER_VERDICT, type Evidence } from './evidence.ts';
import { asReadFailure, isObstacle } from './read-failure.ts';

/** One cause's verdict as the investigation keeps it. */
export interface VerdictResult {
  cause: string;
  title: string;
  verdict: 'holds' | 'ruled_out' | 'unknown';
  reason: string;
  /** Set for `unknown` only. */
  obstacle: Obstacle | null;
  evidence: Evidence[];
  remedy: Remedy | null;
  verification: Verification | null;
  /** How directly the evidence speaks (0-1); ranks causes of equal specificity. */
  strength: number;
  specificity: number;
  /** What it holds on (instances, targets), for ranking only: a cause that explains another ranks above it on a common subject. */
  subjects: string[];
  /** The causes it explains (its declaration). */
  explains: string[];
  took_ms: number;
}

const REASON_MAX = 1000;

/** A verdict without running the check: a capability missing, a cause cut off before it started. */
export function unknownVerdict(cause: Cause, obstacle: Obstacle, reason: string, took_ms = 0): VerdictResult {
  return {
    cause: cause.id,
    title: cause.title,
    verdict: 'unknown',
    reason: clip(reason, REASON_MAX, '…'),
    obstacle,
    evidence: [],
    remedy: null,
    verification: null,
    strength: 0,
    specificity: cause.specificity,
    subjects: [],
    explains: cause.explains,
    took_ms,
  };
}

/**
 * Runs one cause's check, guarded: it never throws and never waits past `timeoutMs`. A throw is
 * `unknown` (a reader's failure keeps its obstacle; anything else is "the read was refused or
 * failed"), as are the deadline and an answer that is not a verdict. The context's signal is
 * aborted when the check is cut off or done, so its reads stop too.
 */
export async function runCheck(
  cause: Cause,
  makeContext: (signal: AbortSignal, deadline: number) => CheckContext,
  opts: { timeoutMs: number; secrets: string[]; at: string; moment?: CheckMoment },
): Promise<VerdictResult> {
  const started = performance.now();
  const wallStart = Date.now();
  const took = () => Math.round(performance.now() - started);
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const cutOff = new Promise<'cut_off'>((resolve) => {
    timer = setTimeout(() => resolve('cut_off'), opts.timeoutMs);
  });
  try {
    const ctx = makeContext(abort.signal, Date.now() + opts.timeoutMs);
    const answer = await Promise.race([Promise.resolve().then(() => cause.check(ctx)), cutOff]);
    if (answer === 'cut_off')
      return unknownVerdict(cause, 'the read was refused or failed', `the check did not answer within ${opts.timeoutMs / 1000} s and was cut off`, took());
    const verdict = readAnswer(cause, answer, opts, took());
    const run = { at: opts.at, moment: opts.moment ?? 'opening' };
    for (const e of verdict.evidence) e.moment = evidenceMoment(e.at, run, wallStart, Date.now());
    return verdict;
  } catch (e) {
    const failure = asReadFailure(e);
    if (failure !== null) return unknownVerdict(cause, failure.obstacle, failure.problem, took());
    const what = e instanceof Error ? e.message : String(e);
    return unknownVerdict(cause, 'the read was refused or failed', `the check failed: ${clip(what.split('\n', 1)[0] ?? '', 300, '…')}`, took());
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

/** The check's answer checked and cleaned; anything else is `unknown`. */
function readAnswer(cause: Cause, raw: unknown, opts: { secrets: string[]; at: string }, took_ms: number): VerdictResult {
  const bad = (why: string) => unknownVerdict(cause, 'the read was refused or failed', `the check answered something that is not a verdict (${why})`, took_ms);
  if (typeof raw !== 'object' || raw === null) return bad('not an object');
  const a = raw as Partial<CheckAnswer> & Record<string, unknown>;
  if (a.verdict !== 'holds' && a.verdict !== 'ruled_out' && a.verdict !== 'unknown') return bad('verdict must be holds, ruled_out or unknown');
  if (typeof a.reason !== 'string' || a.reason.trim() === '') return bad('it gives no reason');
  if (a.verdict === 'unknown' && !isObstacle(a.obstacle)) return bad('an unknown verdict names one of the five obstacles');
  const given = a.evidence === undefined && a.verdict === 'unknown' ? [] : a.evidence;
  if (!Array.isArray(given)) return bad('evidence must be a list');
  if (a.verdict !== 'unknown' && given.length === 0) return bad(`${a.verdict} needs evidence`);
  const evidence: Evidence[] = [];
  for (const item of given.slice(0, MAX_EVIDENCE_PER_VERDICT)) {
    const e = cleanEvidence(item, opts.secrets, opts.at);
    if (e === null) return bad('an evidence item is not an object');
    evidence.push(e);
  }
  const holds = a.verdict === 'holds';
  return {
    cause: cause.id,
    title: cause.title,
    verdict: a.verdict,
    reason: clip(a.reason, REASON_MAX, '…'),
    obstacle: a.verdict === 'unknown' ? (a.obstacle as Obstacle) : null,
    evidence,
    remedy: holds ? remedyOf(a.remedy) : null,
    verification: holds ? verificationOf(a.verification, cause.id) : null,
    strength: holds && typeof a.strength === 'number' && a.strength >= 0 && a.strength <= 1 ? a.strength : holds ? 1 : 0,
    specificity: cause.specificity,
    subjects: holds ? subjectsOf(a.subjects) : [],
    explains: cause.explains,
    took_ms,
  };
}

function subjectsOf(v: unknown): string[] {
  if (!Array.isArray(v)) return [];
  return [...new Set(v.filter((x): x is string => typeof x === 'string' && x !== '').map((x) => x.slice(0, 200)))].slice(0, 50);
}

function remedyOf(r: unknown): Remedy | null {
  if (typeof r !== 'object' || r === null) return null;
  const x = r as Record<string, unknown>;
  if (typeof x.action !== 'string' || !/^[a-z][a-z0-9_-]{0,39}$/.test(x.action)) return null;
  const params = typeof x.params === 'object' && x.params !== null && !Array.isArray(x.params) ? x.params : {};
  const json = JSON.stringify(params);
  if (json.length > 4096) return null;
  return {
    action: x.action,
    params: JSON.parse(json) as Record<string, unknown>,
    ...(typeof x.undo === 'string' ? { undo: clip(x.undo, 500, '…') } : {}),
  };
}

function verificationOf(v: unknown, own: string): Verification | null {
  if (typeof v !== 'object' || v === null) return null;
  const x = v as Record<string, unknown>;
  const cause = typeof x.cause === 'string' && x.cause.length <= 130 ? x.cause : own;
  if (x.expect !== 'ruled_out' && x.expect !== 'holds') return null;
  const after = typeof x.after_s === 'number' && x.after_s > 0 && x.after_s <= 3600 ? x.after_s : undefined;
  return { cause, expect: x.expect, ...(after === undefined ? {} : { after_s: after }) };
}
