import { randomUUID } from 'node:crypto';
import { SECOND, type Clock } from '../clock.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { FiringsRepo } from '../intake/firings.repo.ts';
import { FLAP_MIN } from '../intake/firings.repo.ts';
import type { HeldAlert, HeldRepo } from '../intake/held.repo.ts';
import type { Logger } from '../log.ts';
import type { Trx } from '../storage/db.ts';
import type { Episode, EpisodeAlert, EpisodeKind, EpisodeRepo } from './episode.repo.ts';
import { clip } from '../text.ts';

/** Alerts that name no service are grouped under this one. */
export const UNMAPPED = 'unknown';
/** Alerts taken into an episode per transaction. */
const BATCH = 500;
/** At most this many fingerprints are listed in one ledger event, and names kept on an episode. */
const LISTED = 100;
/** How soon after a push the grouping runs (pushes arriving meanwhile share the run). */
const NUDGE_MS = 200;

/** Until the investigation capability exists every new episode is escalated to people. */
const DECISION = { decision: 'abstain', outcome: 'escalated', result: 'none' } as const;
const DECISION_REASON = 'no investigation capability is installed yet: escalated to people without a diagnosis';

export interface EpisodeServiceDeps {
  episodes: EpisodeRepo;
  held: HeldRepo;
  firings: FiringsRepo;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  debounceS: number;
}

/**
 * Turns held alerts into episodes: grouping by service, correlation with the service's open
 * episode, the debounce before a new one opens, and closing once none of its alerts fire.
 * Everything it reads lives in the database, so it can run at any moment (after pushes, on the
 * tick, after a restart) and always reaches the same result; each step commits with its
 * ledger events, whose trace is the episode id.
 */
export class EpisodeService {
  readonly #d: EpisodeServiceDeps;
  #running: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | null = null;
  #timerAt = 0;
  #stopped = false;

  constructor(deps: EpisodeServiceDeps) {
    this.#d = deps;
  }

  /** Asks for a run soon; many nudges in a row make one run. */
  nudge(): void {
    this.#runIn(NUDGE_MS);
  }

  /** Runs a pass after `ms` of real time, unless one is already due sooner. */
  #runIn(ms: number): void {
    const at = Date.now() + ms;
    if (this.#stopped || (this.#timer !== null && this.#timerAt <= at)) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.process().catch((err: unknown) => this.#d.log.error({ err }, 'grouping alerts into episodes failed'));
    }, ms);
    this.#timer.unref();
  }

  /** One full pass; passes never overlap. */
  process(): Promise<void> {
    const run = this.#running.then(() => (this.#stopped ? undefined : this.#pass()));
    this.#running = run.catch(() => undefined);
    return run;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  async #pass(): Promise<void> {
    const { held, episodes, ledger, clock, debounceS } = this.#d;
    const now = clock.now();
    let nextDue = Infinity;
    const groups = await held.ungroupedByService();
    const open = groups.length === 0 ? new Set<string>() : new Set(await episodes.openServices());
    for (const group of groups) {
      const service = group.service ?? UNMAPPED;
      const dueAt = Date.parse(group.first_fired) + debounceS * SECOND;
      const due = dueAt <= now.getTime();
      if (!due) nextDue = Math.min(nextDue, dueAt);
      // Nothing to do yet: no episode to join, and the window still runs.
      if (!due && !open.has(service)) continue;
      for (;;) {
        const taken = await ledger.transact(async (trx, record) => {
          const open = await episodes.openFor(trx, service);
          if (open === null && !due) return 0;
          const alerts = await held.ungroupedOf(trx, group.service, BATCH);
          if (alerts.length === 0) return 0;
          if (open === null) await this.#open(trx, record, service, alerts, now);
          else await this.#join(trx, record, open, alerts, now);
          return alerts.length;
        }, { headFirst: true });
        if (taken < BATCH) break;
      }
    }
    if ((await episodes.closable()).length === 0) return this.#next(nextDue, now);
    await ledger.transact(async (trx, record) => {
      for (const id of await episodes.closable(trx)) {
        const ended = await episodes.endings(trx, id);
        const episode = await episodes.get(id, trx);
        await episodes.close(trx, id, now);
        const duration_s = episode === null ? null : Math.round((now.getTime() - episode.t_open_ms) / SECOND);
        await record({ type: 'episode.closed', actor: 'system', reason: 'none of its alerts fire any more', trace: id, data: { service: episode?.service ?? null, duration_s, ...ended } });
      }
    }, { headFirst: true });
    this.#next(nextDue, now);
  }

  /** The next debounce window to end: the pass runs again then, without waiting for the tick. */
  #next(nextDue: number, now: Date): void {
    if (nextDue !== Infinity) this.#runIn(Math.max(NUDGE_MS, nextDue - now.getTime()));
  }

  async #open(trx: Trx, record: RecordEvent, service: string, alerts: HeldAlert[], now: Date): Promise<void> {
    const members = await this.#members(trx, alerts, now);
    const first = alerts[0]!;
    const episode: Episode = {
      id: randomUUID(),
      kind: kindOf(alerts),
      state: 'open',
      service,
      alerts: namesOf([], alerts),
      t_open: now.toISOString(),
      t_open_ms: now.getTime(),
      t_close: null,
      t_close_ms: null,
      ...DECISION,
      note: clip(first.summary || first.name, 1000),
    };
    await this.#d.episodes.insert(trx, episode);
    await this.#d.episodes.addAlerts(trx, episode.id, members);
    await this.#d.held.setEpisode(trx, alerts.map((a) => a.fingerprint), episode.id);
    await record({
      type: 'episode.opened',
      actor: 'system',
      reason: `${alerts.length} alert(s) of ${service} firing for ${this.#d.debounceS} s`,
      trace: episode.id,
      data: { service, kind: episode.kind, alerts: episode.alerts, count: alerts.length, first_fired: first.fired_at, fingerprints: listed(alerts), flapping: members.filter((m) => m.baseline.flapping).length },
    });
    await record({ type: 'episode.decided', actor: 'system', reason: DECISION_REASON, trace: episode.id, data: { service, decision: DECISION.decision, outcome: DECISION.outcome } });
  }

  async #join(trx: Trx, record: RecordEvent, episode: Episode, alerts: HeldAlert[], now: Date): Promise<void> {
    const members = await this.#members(trx, alerts, now);
    const kind: EpisodeKind = episode.kind === 'incident' ? 'incident' : kindOf(alerts);
    const next: Episode = { ...episode, kind, alerts: namesOf(episode.alerts, alerts) };
    await this.#d.episodes.addAlerts(trx, episode.id, members);
    await this.#d.episodes.update(trx, next);
    await this.#d.held.setEpisode(trx, alerts.map((a) => a.fingerprint), episode.id);
    await record({
      type: 'episode.alerts_joined',
      actor: 'system',
      reason: `${alerts.length} alert(s) of ${episode.service} joined the open episode`,
      trace: episode.id,
      data: { service: episode.service, kind, count: alerts.length, alerts: namesOf([], alerts), fingerprints: listed(alerts) },
    });
  }

  async #members(trx: Trx, alerts: HeldAlert[], now: Date): Promise<(EpisodeAlert & { labels: Record<string, string> })[]> {
    const counts = await this.#d.firings.counts(trx, alerts.map((a) => a.fingerprint), now.getTime());
    return alerts.map((a) => {
      const c = counts.get(a.fingerprint) ?? { d7: 0, d30: 0, flap: 0 };
      return {
        fingerprint: a.fingerprint,
        name: a.name,
        severity: a.severity,
        source: a.source,
        summary: a.summary,
        labels: a.labels,
        joined_at: now.toISOString(),
        ended_at: null,
        end_status: null,
        baseline: { first_seen: a.first_seen, last_seen: a.last_seen, firings_7d: c.d7, firings_30d: c.d30, flapping: c.flap >= FLAP_MIN },
      };
    });
  }
}

/** An episode is an incident when any of its alerts is more than information. */
function kindOf(alerts: HeldAlert[]): EpisodeKind {
  return alerts.some((a) => a.severity !== 'info') ? 'incident' : 'notice';
}

function namesOf(known: string[], alerts: HeldAlert[]): string[] {
  const names = new Set(known);
  for (const a of alerts) {
    if (names.size >= LISTED) break;
    names.add(a.name);
  }
  return [...names];
}

function listed(alerts: HeldAlert[]): string[] {
  return alerts.slice(0, LISTED).map((a) => a.fingerprint);
}
