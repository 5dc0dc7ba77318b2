/**
 * Judging a scenario from what the service answered: which episode holds its alert, where it was
 * placed, what its last finished diagnosis says, and how long it took (Alertmanager's `startsAt`
 * of the alert and its first arrival at the service, pushed or polled → `decision.diagnosed`; the checks alone: the run's first
 * `check.started` → `decision.diagnosed`).
 */
import { hasLabels, type EpisodeView, type Observer } from './observe.ts';
import type { Expect, Scenario, World } from './scenarios.ts';

export interface Judged {
  id: string;
  injects: string;
  nearMiss: boolean;
  expected: Expect;
  episode: string | null;
  placed: string | null;
  top: string | null;
  holds: string[];
  unknowns: string[];
  /** Alertmanager's startsAt of the alert → diagnosis, s. */
  alertToDiagnosisS: number | null;
  /** The alert's first arrival at the service (pushed or polled) → diagnosis, s. */
  arrivalToDiagnosisS: number | null;
  /** The diagnosing run's first check.started → decision.diagnosed, s. */
  checksS: number | null;
  proposal: string;
  outcome: string;
  settled: boolean;
  falseHolds: string[];
  misplaced: boolean;
  problems: string[];
  right: boolean;
}

const s1 = (ms: number): number => Math.round(ms / 100) / 10;
const short = (v: unknown): string => (typeof v === 'string' && /^[0-9a-f]{40}$/.test(v) ? v.slice(0, 12) : JSON.stringify(v));

/** The episode that holds the scenario's alert (the earliest such), or null. */
export function episodeOf(sc: Scenario, w: World, o: Observer): EpisodeView | null {
  const labels = sc.trigger.labels(w);
  const found = [...o.episodes.values()]
    .filter((e) => e.signals.some((s) => s.name === sc.trigger.alert && hasLabels(s.labels, labels)))
    .sort((a, b) => Date.parse(a.t_open) - Date.parse(b.t_open));
  return found[0] ?? null;
}

/** The later alert of a joining scenario, once it is in the episode. */
function joined(sc: Scenario, w: World, ep: EpisodeView): EpisodeView['signals'][number] | null {
  if (sc.afterOpen === undefined) return null;
  const labels = sc.afterOpen.labels(w);
  return ep.signals.find((s) => s.name === sc.afterOpen!.alert && hasLabels(s.labels, labels)) ?? null;
}

interface Run {
  run: number;
  diagnosedAt: number;
  startedAt: number | null;
}

/** Each finished run: its `decision.diagnosed` and its first `check.started`, oldest first. */
function runs(ep: EpisodeView): Run[] {
  return ep.timeline
    .filter((e) => e.type === 'decision.diagnosed')
    .map((d) => {
      const run = Number(d.data.run);
      const started = ep.timeline.find((e) => e.type === 'check.started' && Number(e.data.run) === run);
      return { run, diagnosedAt: Date.parse(d.at), startedAt: started === undefined ? null : Date.parse(started.at) };
    });
}

/** The first run that started after `at` (ms). */
const runAfter = (ep: EpisodeView, at: number): Run | null => runs(ep).find((r) => r.startedAt !== null && r.startedAt >= at) ?? null;

/** Whether the scenario has its final answer: diagnosed, after the joining alert, and past its proposal's rehearsal. */
export function settled(sc: Scenario, w: World, o: Observer): boolean {
  const ep = episodeOf(sc, w, o);
  if (ep === null || ep.investigation === null || !['diagnosed', 'skipped'].includes(ep.investigation.state)) return false;
  if (sc.afterOpen !== undefined) {
    const j = joined(sc, w, ep);
    const last = runs(ep).at(-1);
    if (j === null || last?.startedAt == null || last.startedAt < Date.parse(j.joined_at)) return false;
  }
  if (sc.expect(w).rehearsed === true) {
    if (ep.policy_decision === null) return false;
    if (ep.proposal !== null && ep.policy_decision.decision === 'act' && ep.rehearsal === null) return false;
  }
  return true;
}

/** Alertmanager's `startsAt` of a signal of the episode: the alert of that name whose labels the signal carries. */
function startsAt(o: Observer, signal: EpisodeView['signals'][number]): number | null {
  const times = [...o.alerts.values()]
    .filter((a) => a.labels.alertname === signal.name && Object.entries(a.labels).every(([k, v]) => k === 'alertname' || signal.labels[k] === v))
    .map((a) => Date.parse(a.startsAt));
  return times.length === 0 ? null : Math.min(...times);
}

/**
 * The diagnosis the clock stops at, and the alert it starts from: the episode's first diagnosis
 * and its earliest alert; for a joining scenario, the first diagnosis of a run that started after
 * the later alert joined, and that alert.
 */
function timed(
  sc: Scenario,
  w: World,
  ep: EpisodeView,
  o: Observer,
  arrivals: Map<string, number>,
): Pick<Judged, 'alertToDiagnosisS' | 'arrivalToDiagnosisS' | 'checksS'> {
  const j = joined(sc, w, ep);
  const run = sc.afterOpen === undefined ? (runs(ep)[0] ?? null) : j === null ? null : runAfter(ep, Date.parse(j.joined_at));
  if (run === null) return { alertToDiagnosisS: null, arrivalToDiagnosisS: null, checksS: null };
  const first = sc.afterOpen === undefined ? [...ep.signals].sort((a, b) => Date.parse(a.joined_at) - Date.parse(b.joined_at)) : [j!];
  const starts = first.map((s) => startsAt(o, s)).filter((x): x is number => x !== null);
  const arrived = first.map((s) => arrivals.get(s.fingerprint)).filter((x): x is number => x !== undefined);
  return {
    alertToDiagnosisS: starts.length === 0 ? null : s1(run.diagnosedAt - Math.min(...starts)),
    arrivalToDiagnosisS: arrived.length === 0 ? null : s1(run.diagnosedAt - Math.min(...arrived)),
    checksS: run.startedAt === null ? null : s1(run.diagnosedAt - run.startedAt),
  };
}

export function judge(sc: Scenario, w: World, o: Observer, arrivals: Map<string, number>): Judged {
  const expected = sc.expect(w);
  const ep = episodeOf(sc, w, o);
  const problems: string[] = [];
  const base: Judged = {
    id: sc.id,
    injects: sc.injects,
    nearMiss: sc.nearMiss === true,
    expected,
    episode: ep?.id ?? null,
    placed: ep?.service ?? null,
    top: ep?.diagnosis?.holds[0] ?? null,
    holds: ep?.diagnosis?.holds ?? [],
    unknowns: ep?.diagnosis?.unknown ?? [],
    alertToDiagnosisS: null,
    arrivalToDiagnosisS: null,
    checksS: null,
    proposal:
      ep?.proposal == null
        ? 'none'
        : `${ep.proposal.action} via ${ep.proposal.connector} ${Object.entries(ep.proposal.params)
            .map(([k, v]) => `${k}=${short(v)}`)
            .join(' ')}`,
    outcome: ep?.outcome ?? '',
    settled: settled(sc, w, o),
    falseHolds: [],
    misplaced: false,
    problems,
    right: false,
  };
  if (ep === null) {
    problems.push(`no episode holds ${sc.trigger.alert} ${JSON.stringify(sc.trigger.labels(w))}`);
    return base;
  }
  if (ep.rehearsal !== null)
    base.proposal += ep.rehearsal.ok === true ? ' (rehearsed)' : ` (rehearsal failed: ${ep.rehearsal.problem ?? ep.rehearsal.shown ?? '?'})`;
  Object.assign(base, timed(sc, w, ep, o, arrivals));

  if (ep.service !== expected.placed) {
    base.misplaced = true;
    problems.push(`placed on ${ep.service}, expected ${expected.placed}`);
  }
  if (!base.settled) problems.push(`not diagnosed by the deadline (investigation ${ep.investigation?.state ?? 'none'}, run ${ep.investigation?.run ?? '-'})`);
  if (ep.diagnosis !== null) {
    const holds = ep.diagnosis.holds;
    if (expected.top === null) base.falseHolds = [...holds];
    else {
      if (base.top === null || !expected.top.includes(base.top))
        problems.push(`top cause ${base.top ?? 'none'}, expected ${expected.top.map((c) => `${c} (${verdictOf(ep, c)})`).join(' or ')}`);
      for (const c of expected.alsoHold ?? []) if (!holds.includes(c)) problems.push(`${c} does not hold (${verdictOf(ep, c)})`);
      const allowed = new Set([...expected.top, ...(expected.alsoHold ?? []), ...(expected.mayHold ?? [])]);
      base.falseHolds = holds.filter((c) => !allowed.has(c));
    }
    for (const c of base.falseHolds) problems.push(`${c} holds and must not: ${reasonOf(ep, c)}`);
    for (const r of expected.reasonNot ?? []) {
      const v = ep.verdicts.find((x) => x.cause === r.cause && x.verdict === 'holds');
      if (v !== undefined && r.pattern.test(v.reason)) problems.push(`${r.cause}: ${r.why}: "${clip(v.reason)}"`);
    }
  }
  if (expected.proposal !== undefined) {
    const p = ep.proposal;
    const same = p !== null && p.action === expected.proposal.action && Object.entries(expected.proposal.params).every(([k, v]) => p.params[k] === v);
    if (!same)
      problems.push(
        `proposal ${p === null ? `none (${ep.policy_decision?.reason ?? 'no decision'})` : base.proposal}, expected ${expected.proposal.action} ${Object.entries(
          expected.proposal.params,
        )
          .map(([k, v]) => `${k}=${short(v)}`)
          .join(' ')}`,
      );
  }
  if (expected.rehearsed === true && ep.proposal !== null && ep.rehearsal?.ok !== true)
    problems.push(
      ep.rehearsal === null
        ? `not rehearsed (${ep.policy_decision?.reason ?? 'no decision'})`
        : `the rehearsal failed: ${clip(ep.rehearsal.problem ?? ep.rehearsal.shown ?? '?')}`,
    );
  base.right = problems.length === 0;
  return base;
}

function verdictOf(ep: EpisodeView, cause: string): string {
  const v = ep.verdicts.find((x) => x.cause === cause);
  return v === undefined ? 'not checked' : `${v.verdict}${v.obstacle === null ? '' : ` (${v.obstacle})`}: ${clip(v.reason)}`;
}

function reasonOf(ep: EpisodeView, cause: string): string {
  return clip(ep.verdicts.find((x) => x.cause === cause)?.reason ?? '?');
}

const clip = (s: string, n = 240): string => (s.length > n ? `${s.slice(0, n)}…` : s);
