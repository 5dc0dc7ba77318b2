import { randomUUID } from 'node:crypto';
import { SECOND, type Clock } from '../clock.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { HeldAlert, HeldAlerts } from '../intake/held-alerts.ts';
import type { Logger } from '../log.ts';
import type { Trx } from '../storage/db.ts';
import type { AlertSeverity, NotifyEvent } from '../plugins/contract.ts';
import { type EpisodeRepo } from './episode.repo.ts';
import { worstOf, type Episode, type EpisodeKind, type EpisodeMember, type OutcomeDetail } from './episode.model.ts';
import { clip } from '../text.ts';
import { Passes } from '../passes.ts';
import { limitReached, stormService, type StormLimits } from './storm.ts';
import type { StormRepo } from './storm.repo.ts';

/** Alerts that name no service are grouped under this one. */
export const UNMAPPED = 'unknown';
/** Alerts taken into an episode per transaction. */
const BATCH = 500;
/** At most this many fingerprints are listed in one ledger event, and names kept on an episode. */
const LISTED = 100;
/** How soon after a push the grouping runs (pushes arriving meanwhile share the run). */
const NUDGE_MS = 200;
/**
 * Alerts one storm transaction takes, and transactions of one sweep per pass: the next pass
 * (services the estate has first) follows at once. Small, so that intake's commits, which wait
 * for the chain head a sweep holds, wait little.
 */
const SWEEP = 200;
const SWEEP_BATCHES = 10;

/**
 * Until the investigation capability exists every new incident goes to people without a
 * diagnosis. The outcome stays empty until a notification was delivered: only then is it
 * `escalated` (see the notify area), so an episode never claims people were told when nobody was.
 */
const DECISION = { decision: 'abstain', outcome: '', result: 'none' } as const;
const DECISION_REASON = 'no investigation capability is installed: to be escalated to people without a diagnosis';
/** Said when an investigation was asked for: people are told now, the diagnosis follows. */
const INVESTIGATING_REASON =
  'escalated to people now, before any action: the investigation (unless autonomy is off) follows with its diagnosis, then acting with what it decided';
/** Said when there is nobody to tell. */
export const NOBODY_TO_TELL = 'nobody to tell: no on-call recipients or targets are set';
const NOTICE_REASON = 'a notice (information only): nobody is paged';

/** A change to an incident that people are told of. */
export interface IncidentChange {
  event: NotifyEvent;
  episode: Episode;
  severity: AlertSeverity;
  /** With `incident.diagnosed`: what the investigation found. */
  diagnosis?: { summary: string; holds: string[]; unknown: string[] };
}

/**
 * Tells people of incidents: writes the messages in the same transaction as the change (an
 * outbox), so the change and its notifications commit together or not at all.
 */
export interface EpisodeNotifier {
  /**
   * Queues the messages about `change` in `trx`; answers who they go to (empty: nobody) and, for a
   * close, the messages still waiting that the close made untrue and dropped (`stale`).
   */
  tell(trx: Trx, change: IncidentChange): Promise<{ to: string[]; stale?: Array<{ event: NotifyEvent; to: string }> }>;
  /** Called after a commit that queued messages: deliver them soon. */
  nudge(): void;
}

/**
 * The investigation's store, below this area: an opening asks for its investigation in its own
 * transaction, and alerts of a new name joining ask for a new run (host/investigation).
 */
export interface InvestigationRequests {
  request(trx: Trx, episodeId: string, service: string, nowMs: number): Promise<void>;
  rerun(trx: Trx, episodeId: string, nowMs: number): Promise<boolean>;
}

export interface EpisodeServiceDeps {
  episodes: EpisodeRepo;
  /** The intake area's held alerts (it alone touches their tables). */
  held: HeldAlerts;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  debounceS: number;
  /** Who is told of incidents; absent: nobody (the outcome then says so). */
  notifier?: EpisodeNotifier;
  /** Where investigations are asked for; absent: none is (the decision then says so). */
  investigations?: InvestigationRequests;
  /**
   * The storm bound (host/episodes/storm.ts): whether the estate has a service, the storms' table
   * and the limits. Absent: every service opens its own episode.
   */
  storms?: { estate: { names(): Promise<string[]> }; repo: StormRepo; limits: StormLimits };
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
  readonly #passes: Passes;
  /** Messages were queued in a transaction of this pass. */
  #queued = false;
  /** Investigations were asked for in this pass. */
  #asked = false;
  readonly #askedListeners: Array<() => void> = [];

  constructor(deps: EpisodeServiceDeps) {
    this.#d = deps;
    this.#passes = new Passes(
      () => this.#pass(),
      (err: unknown) => this.#d.log.error({ err }, 'grouping alerts into episodes failed'),
      NUDGE_MS,
    );
  }

  /** Called after a pass that asked for investigations committed (the investigation runs them soon). */
  onInvestigationsAsked(listener: () => void): void {
    this.#askedListeners.push(listener);
  }

  /** Asks for a run soon; many nudges in a row make one run. */
  nudge(): void {
    this.#passes.nudge();
  }

  /** One full pass; passes never overlap. */
  process(): Promise<void> {
    return this.#passes.run();
  }

  async stop(): Promise<void> {
    await this.#passes.stop();
  }

  async #pass(): Promise<void> {
    const { held, episodes, ledger, clock, debounceS } = this.#d;
    const now = clock.now();
    let nextDue = Infinity;
    const groups = await held.ungroupedByService();
    const open = groups.length === 0 ? new Set<string>() : new Set(await episodes.openServices());
    // Services the estate has come first: a storm of names it does not know never delays them.
    const estate = this.#d.storms === undefined || groups.length === 0 ? null : new Set(await this.#d.storms.estate.names());
    const isKnown = (service: string | null): boolean => estate === null || (service !== null && estate.has(service));
    groups.sort((a, b) => Number(isKnown(b.service)) - Number(isKnown(a.service)));
    /** Services whose alerts a storm swept up in this pass. */
    const swept = new Set<string>();
    let sweptAll = true;
    for (const group of groups) {
      const service = group.service ?? UNMAPPED;
      if (swept.has(service)) continue;
      const dueAt = Date.parse(group.first_fired) + debounceS * SECOND;
      const due = dueAt <= now.getTime();
      if (!due) nextDue = Math.min(nextDue, dueAt);
      // Nothing to do yet: no episode to join, and the window still runs.
      if (!due && !open.has(service)) continue;
      for (;;) {
        const r = await ledger.transact(
          async (trx, record): Promise<{ taken: number; limited?: { source: string; why: string } }> => {
            const open = await episodes.openFor(trx, service);
            if (open === null && !due) return { taken: 0 };
            const alerts = await held.ungroupedOf(trx, group.service, BATCH);
            if (alerts.length === 0) return { taken: 0 };
            if (open !== null) {
              await this.#join(trx, record, open, alerts, now);
              return { taken: alerts.length };
            }
            const source = alerts[0]!.source;
            const unknown = !isKnown(group.service);
            const storms = this.#d.storms;
            if (unknown && storms !== undefined) {
              // A service a storm holds stays in it while it is open.
              const holding = await storms.repo.holding(trx, service);
              const storm = holding === null ? null : await episodes.lock(trx, holding);
              if (storm !== null && storm.state === 'open') {
                await this.#join(trx, record, storm, alerts, now);
                return { taken: alerts.length };
              }
              const reached = await limitReached(episodes, trx, storms.limits, source, service, now.getTime());
              // The source's limit: all its alerts of such services go to the storm (the sweep, below).
              if (reached?.limit === 'source') return { taken: 0, limited: { source, why: reached.why } };
              // This service's limit: its alerts alone join the source's storm.
              if (reached !== null) {
                const storm = await episodes.openFor(trx, stormService(source));
                if (storm === null) await this.#openStorm(trx, record, source, reached.why, alerts, now);
                else await this.#join(trx, record, storm, alerts, now);
                return { taken: alerts.length };
              }
            }
            await this.#open(trx, record, service, alerts, now, { source, unknown });
            return { taken: alerts.length };
          },
          { headFirst: true },
        );
        if (r.limited !== undefined) {
          const done = await this.#sweep(r.limited.source, r.limited.why, [...(estate ?? [])], now);
          for (const s of done.services) swept.add(s);
          if (!done.all) sweptAll = false;
          break;
        }
        if (r.taken < BATCH) break;
      }
      if (!sweptAll) break;
    }
    // A storm left alerts for the next pass, which starts with the services the estate has.
    if (!sweptAll) this.#passes.runIn(NUDGE_MS);
    this.#nudgeNotifier();
    this.#nudgeInvestigations();
    if ((await episodes.closable()).length === 0) return this.#next(nextDue, now);
    await ledger.transact(
      async (trx, record) => {
        for (const id of await episodes.closable(trx)) {
          const ended = await episodes.endings(trx, id);
          const episode = await episodes.get(id, trx);
          await episodes.close(trx, id, now);
          const duration_s = episode === null ? null : Math.round((now.getTime() - episode.t_open_ms) / SECOND);
          await record({
            type: 'episode.closed',
            actor: 'system',
            reason: 'none of its alerts fire any more',
            trace: id,
            data: { service: episode?.service ?? null, duration_s, ...ended },
          });
          // An incident or a storm is closed to those told of it; a notice told nobody.
          if (episode !== null && episode.kind !== 'notice') {
            const { stale } = await this.#tell(
              trx,
              'incident.closed',
              { ...episode, state: 'closed', t_close: now.toISOString(), t_close_ms: now.getTime() },
              await episodes.worstSeverity(trx, id),
            );
            if (stale.length > 0)
              await record({
                type: 'outcome.notify_dropped',
                actor: 'system',
                reason: clip(
                  `the incident closed before ${stale.length} message(s) were delivered: not sent (${stale.map((d) => `${d.event} to ${d.to}`).join(', ')})`,
                  2000,
                  '…',
                ),
                trace: id,
                data: { service: episode.service, dropped: stale.slice(0, LISTED) },
              });
          }
        }
      },
      { headFirst: true },
    );
    this.#nudgeNotifier();
    this.#next(nextDue, now);
  }

  /** The next debounce window to end: the pass runs again then, without waiting for the tick. */
  #next(nextDue: number, now: Date): void {
    if (nextDue !== Infinity) this.#passes.runIn(Math.max(NUDGE_MS, nextDue - now.getTime()));
  }

  /**
   * A limit was reached for `source`: its due alerts of services the estate does not have and that
   * have no open episode join the source's storm episode, SWEEP per transaction, at most
   * SWEEP_BATCHES transactions per pass (`all`: none is left). Answers the services swept.
   */
  async #sweep(source: string, why: string, known: string[], now: Date): Promise<{ services: string[]; all: boolean }> {
    const { held, episodes, ledger } = this.#d;
    const firedBefore = new Date(now.getTime() - this.#d.debounceS * SECOND).toISOString();
    const swept = new Set<string>();
    for (let i = 0; i < SWEEP_BATCHES; i++) {
      const open = new Set(await episodes.openServices());
      const taken = await ledger.transact(
        async (trx, record) => {
          const except = [...new Set([...known, ...open])].filter((s) => s !== UNMAPPED);
          const alerts = await held.ungroupedFrom(trx, source, firedBefore, except, open.has(UNMAPPED), SWEEP);
          if (alerts.length === 0) return 0;
          const name = stormService(source);
          const storm = await episodes.openFor(trx, name);
          if (storm === null) await this.#openStorm(trx, record, source, why, alerts, now);
          else await this.#join(trx, record, storm, alerts, now);
          for (const a of alerts) swept.add(a.service ?? UNMAPPED);
          return alerts.length;
        },
        { headFirst: true },
      );
      if (taken < SWEEP) return { services: [...swept], all: true };
    }
    return { services: [...swept], all: false };
  }

  /** Opens the storm episode of `source` with its first alerts: told as an incident, never investigated. */
  async #openStorm(trx: Trx, record: RecordEvent, source: string, why: string, alerts: HeldAlert[], now: Date): Promise<void> {
    const service = stormService(source);
    const episode: Episode = {
      id: randomUUID(),
      kind: 'storm',
      state: 'open',
      service,
      alerts: [],
      t_open: now.toISOString(),
      t_open_ms: now.getTime(),
      t_close: null,
      t_close_ms: null,
      ...DECISION,
      note: clip(`Alert storm from ${source}: ${why}; its further alerts of services the estate does not have are held here, not opened one by one`, 1000),
      outcome_detail: null,
    };
    await this.#d.episodes.insert(trx, episode, { source, unknown: false });
    await record({
      type: 'episode.opened',
      actor: 'system',
      reason: `alert storm from ${source}: ${why}`,
      trace: episode.id,
      data: { service, kind: 'storm', source, why },
    });
    await this.#join(trx, record, episode, alerts, now, true);
    const { to } = await this.#tell(trx, 'incident.opened', { ...episode, alerts: namesOf([], alerts) }, worstOf(alerts.map((a) => a.severity)));
    const detail = this.#pending(to, now);
    await this.#d.episodes.setOutcome(trx, episode.id, DECISION.outcome, detail);
    await record({
      type: 'episode.decided',
      actor: 'system',
      reason: `a storm is not investigated (no one service); people are told; ${detail.reason}`,
      trace: episode.id,
      data: { service, decision: DECISION.decision, outcome: null, to },
    });
  }

  async #open(
    trx: Trx,
    record: RecordEvent,
    service: string,
    alerts: HeldAlert[],
    now: Date,
    opened = { source: alerts[0]!.source, unknown: false },
  ): Promise<void> {
    const members = await this.#members(trx, alerts, now);
    const first = alerts[0]!;
    const kind = kindOf(alerts);
    const episode: Episode = {
      id: randomUUID(),
      kind,
      state: 'open',
      service,
      alerts: namesOf([], alerts),
      t_open: now.toISOString(),
      t_open_ms: now.getTime(),
      t_close: null,
      t_close_ms: null,
      ...DECISION,
      note: clip(first.summary || first.name, 1000),
      outcome_detail: null,
    };
    await this.#d.episodes.insert(trx, episode, opened);
    await this.#d.episodes.addAlerts(trx, episode.id, members);
    await this.#d.held.setEpisode(
      trx,
      alerts.map((a) => a.fingerprint),
      episode.id,
    );
    if (this.#d.investigations !== undefined) {
      await this.#d.investigations.request(trx, episode.id, service, now.getTime());
      this.#asked = true;
    }
    await record({
      type: 'episode.opened',
      actor: 'system',
      reason: `${alerts.length} alert(s) of ${service} firing for ${this.#d.debounceS} s`,
      trace: episode.id,
      data: {
        service,
        kind: episode.kind,
        alerts: episode.alerts,
        count: alerts.length,
        first_fired: first.fired_at,
        fingerprints: listed(alerts),
        flapping: members.filter((m) => m.baseline.flapping).length,
      },
    });
    const to = kind === 'incident' ? (await this.#tell(trx, 'incident.opened', episode, worstOf(alerts.map((a) => a.severity)))).to : null;
    const detail = this.#pending(to, now);
    await this.#d.episodes.setOutcome(trx, episode.id, DECISION.outcome, detail);
    await record({
      type: 'episode.decided',
      actor: 'system',
      reason: `${this.#decisionReason()}; ${detail.reason}`,
      trace: episode.id,
      data: { service, decision: DECISION.decision, outcome: null, to: to ?? [] },
    });
  }

  #decisionReason(): string {
    return this.#d.investigations === undefined ? DECISION_REASON : INVESTIGATING_REASON;
  }

  /** The outcome detail of an episode nobody has been told of yet: why, or who is about to be. */
  #pending(to: string[] | null, now: Date): OutcomeDetail {
    const reason = to === null ? NOTICE_REASON : to.length === 0 ? NOBODY_TO_TELL : `telling ${to.join(', ')}: not delivered yet`;
    return { value: null, reason, at: now.toISOString(), told: [], channels: [] };
  }

  /** Queues the notifications of a change; answers who they go to, and what a close dropped. */
  async #tell(
    trx: Trx,
    event: NotifyEvent,
    episode: Episode,
    severity: AlertSeverity,
  ): Promise<{ to: string[]; stale: Array<{ event: NotifyEvent; to: string }> }> {
    if (this.#d.notifier === undefined) return { to: [], stale: [] };
    const { to, stale } = await this.#d.notifier.tell(trx, { event, episode, severity });
    if (to.length > 0) this.#queued = true;
    return { to, stale: stale ?? [] };
  }

  #nudgeInvestigations(): void {
    if (!this.#asked) return;
    this.#asked = false;
    for (const l of this.#askedListeners) l();
  }

  #nudgeNotifier(): void {
    if (!this.#queued) return;
    this.#queued = false;
    this.#d.notifier?.nudge();
  }

  async #join(trx: Trx, record: RecordEvent, episode: Episode, alerts: HeldAlert[], now: Date, opening = false): Promise<void> {
    if (episode.kind === 'storm') return this.#joinStorm(trx, record, episode, alerts, now, opening);
    const members = await this.#members(trx, alerts, now);
    const kind: EpisodeKind = episode.kind === 'incident' ? 'incident' : kindOf(alerts);
    const next: Episode = { ...episode, kind, alerts: namesOf(episode.alerts, alerts) };
    const known = new Set(episode.alerts);
    if (this.#d.investigations !== undefined && alerts.some((a) => !known.has(a.name))) {
      if (await this.#d.investigations.rerun(trx, episode.id, now.getTime())) this.#asked = true;
    }
    const before = await this.#d.episodes.worstSeverity(trx, episode.id);
    const after = worstOf([before, ...alerts.map((a) => a.severity)]);
    await this.#take(trx, next, members, alerts);
    await record({
      type: 'episode.alerts_joined',
      actor: 'system',
      reason: `${alerts.length} alert(s) of ${episode.service} joined the open episode`,
      trace: episode.id,
      data: { service: episode.service, kind, count: alerts.length, alerts: namesOf([], alerts), fingerprints: listed(alerts) },
    });
    if (episode.kind === 'notice' && kind === 'incident') {
      // A notice became an incident: people hear of it now, as of an incident opening.
      const { to } = await this.#tell(trx, 'incident.opened', next, after);
      const detail = this.#pending(to, now);
      await this.#d.episodes.setOutcome(trx, episode.id, DECISION.outcome, detail);
      await record({
        type: 'episode.decided',
        actor: 'system',
        reason: `the notice became an incident: ${this.#decisionReason()}; ${detail.reason}`,
        trace: episode.id,
        data: { service: episode.service, decision: DECISION.decision, outcome: null, to },
      });
    } else if (kind === 'incident' && SEVERITY_RANK[after] > SEVERITY_RANK[before]) {
      await this.#tell(trx, 'incident.escalated', next, after);
    }
  }

  /** The alerts become members of the episode (`next`: its names and kind after they joined). */
  async #take(trx: Trx, next: Episode, members: EpisodeMember[], alerts: HeldAlert[]): Promise<void> {
    await this.#d.episodes.addAlerts(trx, next.id, members);
    await this.#d.episodes.update(trx, next);
    await this.#d.held.setEpisode(
      trx,
      alerts.map((a) => a.fingerprint),
      next.id,
    );
  }

  /** Alerts join a storm: its counts per service, one event for the batch, and people told when it gets worse. */
  async #joinStorm(trx: Trx, record: RecordEvent, episode: Episode, alerts: HeldAlert[], now: Date, opening: boolean): Promise<void> {
    const members = await this.#members(trx, alerts, now);
    const before = opening ? null : await this.#d.episodes.worstSeverity(trx, episode.id);
    const next: Episode = { ...episode, alerts: namesOf(episode.alerts, alerts) };
    await this.#take(trx, next, members, alerts);
    const counts = new Map<string, number>();
    for (const a of alerts) counts.set(a.service ?? UNMAPPED, (counts.get(a.service ?? UNMAPPED) ?? 0) + 1);
    await this.#d.storms?.repo.add(trx, episode.id, counts, now.toISOString());
    await record({
      type: 'episode.storm_joined',
      actor: 'system',
      reason: `${alerts.length} alert(s) of ${counts.size} service(s) the estate does not have joined the storm`,
      trace: episode.id,
      data: { service: episode.service, count: alerts.length, services: [...counts.keys()].slice(0, LISTED), fingerprints: listed(alerts) },
    });
    const after = worstOf([before ?? 'info', ...alerts.map((a) => a.severity)]);
    if (before !== null && SEVERITY_RANK[after] > SEVERITY_RANK[before]) await this.#tell(trx, 'incident.escalated', next, after);
  }

  async #members(trx: Trx, alerts: HeldAlert[], now: Date): Promise<EpisodeMember[]> {
    const counts = await this.#d.held.histories(
      trx,
      alerts.map((a) => a.fingerprint),
      now.getTime(),
    );
    return alerts.map((a) => {
      const c = counts.get(a.fingerprint) ?? { d7: 0, d30: 0, flapping: false };
      return {
        fingerprint: a.fingerprint,
        name: a.name,
        severity: a.severity,
        source: a.source,
        summary: a.summary,
        labels: a.labels,
        context: a.context,
        joined_at: now.toISOString(),
        ended_at: null,
        end_status: null,
        baseline: { first_seen: a.first_seen, last_seen: a.last_seen, firings_7d: c.d7, firings_30d: c.d30, flapping: c.flapping },
      };
    });
  }
}

const SEVERITY_RANK: Record<AlertSeverity, number> = { info: 0, warning: 1, critical: 2 };

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
