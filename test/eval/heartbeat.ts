/**
 * The heartbeat scenario's judge. The Watchdog (an alert that always fires) is the alerting
 * pipeline's heartbeat: it must never open an incident of its own, and when it stops arriving an
 * incident must open once the source's heartbeat timeout has passed (set by the eval with
 * `PUT /v1/settings/heartbeats`), or at once when its tool resolves it (the rule went: Prometheus
 * resolves its alert, which the service takes as the heartbeat stopping). The incident is recognised by what it says, not by a name the
 * service must use: an episode opened after the Watchdog stopped whose alerts, note, service or
 * signal labels speak of a heartbeat, the Watchdog or a dead man's switch.
 */
import type { Judged } from './judge.ts';
import type { EpisodeView, Observer } from './observe.ts';
import type { Scenario } from './scenarios.ts';

/** The timeout the eval sets for the `alertmanager` source. */
export const HEARTBEAT_TIMEOUT_S = 60;
const WORDS = /heartbeat|watchdog|dead.?man/i;

export interface HeartbeatRun {
  /** When the Watchdog rule was removed (ms). */
  stoppedAt: number | null;
  /** What `PUT /v1/settings/heartbeats` answered, when it was not a success. */
  settingProblem: string | null;
}

const speaks = (e: EpisodeView): boolean =>
  WORDS.test([e.service, e.note ?? '', ...e.alerts, ...e.signals.flatMap((s) => [s.name, ...Object.values(s.labels)])].join(' '));

/** The incident the stopped heartbeat opened, if any. */
function incidentOf(o: Observer, run: HeartbeatRun): EpisodeView | null {
  if (run.stoppedAt === null) return null;
  return (
    [...o.episodes.values()]
      .filter((e) => Date.parse(e.t_open) > run.stoppedAt! && e.kind === 'incident' && speaks(e))
      .sort((a, b) => Date.parse(a.t_open) - Date.parse(b.t_open))[0] ?? null
  );
}

export function heartbeatSettled(o: Observer, run: HeartbeatRun): boolean {
  return incidentOf(o, run) !== null;
}

export function judgeHeartbeat(sc: Scenario, o: Observer, run: HeartbeatRun): Judged {
  const problems: string[] = [];
  if (run.settingProblem !== null) problems.push(run.settingProblem);
  const incident = incidentOf(o, run);
  for (const e of o.episodes.values())
    if (e.id !== incident?.id && e.signals.some((s) => s.name === 'Watchdog'))
      problems.push(
        `the Watchdog (always firing) opened episode ${e.id.slice(0, 8)} on ${e.service}, ${e.state}${e.state === 'open' ? '' : ' once the Watchdog stopped'}`,
      );
  if (incident === null) problems.push(`no incident opened after the Watchdog stopped (timeout ${HEARTBEAT_TIMEOUT_S} s)`);
  const openedS = incident === null || run.stoppedAt === null ? null : Math.round((Date.parse(incident.t_open) - run.stoppedAt) / 100) / 10;
  // The last heartbeat came at most 10 s (the Watchdog route's repeat) before the rule went. A
  // heartbeat its tool resolved (the rule went, so Prometheus resolves its alert) is missing at
  // once: then the incident may open before the timeout, but not before that resolve arrived.
  const resolved = o.heartbeatEvents.find(
    (e) => e.type === 'signal.heartbeat_missing' && /resolved by its tool/.test(e.reason) && run.stoppedAt !== null && Date.parse(e.at) >= run.stoppedAt,
  );
  if (incident !== null && resolved !== undefined && Date.parse(incident.t_open) < Date.parse(resolved.at))
    problems.push(`the heartbeat incident opened before the Watchdog's resolve arrived`);
  if (openedS !== null && resolved === undefined && openedS < HEARTBEAT_TIMEOUT_S - 10)
    problems.push(`the heartbeat incident opened ${openedS} s after the Watchdog stopped: before its ${HEARTBEAT_TIMEOUT_S} s timeout could have passed`);
  return {
    id: sc.id,
    injects: sc.injects,
    nearMiss: false,
    expected: sc.expect({} as never),
    episode: incident?.id ?? null,
    placed: incident?.service ?? null,
    top: incident?.diagnosis?.holds[0] ?? null,
    holds: incident?.diagnosis?.holds ?? [],
    unknowns: incident?.diagnosis?.unknown ?? [],
    // For the heartbeat: the rule's removal → the incident's opening.
    alertToDiagnosisS: openedS,
    arrivalToDiagnosisS: null,
    checksS: null,
    proposal: incident?.proposal == null ? 'none' : incident.proposal.action,
    outcome: incident?.outcome ?? '',
    settled: incident !== null,
    falseHolds: [],
    misplaced: false,
    problems,
    right: problems.length === 0,
  };
}
