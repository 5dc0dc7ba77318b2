import { HOUR, type Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { EventInput } from '../ledger/entry.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Trx } from '../storage/db.ts';
import type { FiringsRepo } from './firings.repo.ts';
import { onlyLastSeenMoved, type HeldAlert, type HeldRepo } from './held.repo.ts';
import { POLLER_LABEL, type Normalisers, type Signal } from './normalise.ts';
import { OWN_SERVICE, place, type ServiceResolver } from './placement.ts';
import type { HeartbeatChange, HeartbeatService } from './heartbeats.ts';

/** A firing alert not sent again for this long is released from the held set. */
export const HOLD_MS = 4 * HOUR;
/** At most this many fingerprints are listed in one ledger event; the counts are always whole. */
const LISTED = 100;
const RELEASE_BATCH = 500;

/** Pushes per shared commit, and alerts (a push is never split). */
const MAX_PUSHES = 256;
const MAX_ALERTS = 10_000;

interface Counts {
  fired: number;
  refreshed: number;
  resolved: number;
  unknown_resolved: number;
}

interface Pending {
  source: string;
  actor: string;
  signals: Signal[];
  /** Heartbeats of the push (dead-man's-switch alerts): noted, never held. */
  beats?: Signal[];
  /** Set by the commit: heartbeats that stopped or came back, acted on once committed. */
  changes?: HeartbeatChange[];
  /** Alerts the service raised itself (a heartbeat missing): `signal.raised`, not `signal.pushed`. */
  raised?: boolean;
  /**
   * Set for a poll: the connector, and the fingerprints resolved because the poll no longer
   * returned them (each resolved only while its held row still carries that connector's
   * `labels.poller`: a push in between takes the alert over).
   */
  polled?: { connector: string; absent: Set<string> };
  resolve(counts: Counts): void;
  reject(err: unknown): void;
}

/** What one poll's alerts did to the held set. */
export interface PolledResult {
  /** Alerts the poll returned. */
  returned: number;
  fired: number;
  refreshed: number;
  /** Held alerts of the connector resolved: no longer returned (or returned resolved). */
  resolved: number;
}

/** What became of alerts taken in: by the held set's change, or refused (`rejected`: an unreadable body) or lost to a failed commit (`failed`). */
export type TakenResult = 'fired' | 'refreshed' | 'resolved' | 'unknown_resolved' | 'rejected' | 'failed';

/** Alerts taken in by this process since it started (GET /metrics reads them). */
export interface TakenCount {
  /** The source word when a normaliser or alias claims it (else `generic`); a poll's connector kind. */
  source: string;
  via: 'push' | 'poll';
  result: TakenResult;
  count: number;
}

export interface PushResult {
  /** Every alert of the push: the body was taken in whole. */
  accepted: number;
  /** How many of them were resolves (of a held alert or of one the service never saw). */
  resolved: number;
  signals: Signal[];
}

/**
 * Alert intake: a push is read whole (or refused whole), then its held-set changes and its
 * `signal.pushed` event commit in one transaction before the 202, so an answered push is never
 * lost; pushes that arrive together share that transaction (group commit). The held set lives in the database: restarts lose and duplicate nothing.
 */
/** Told, inside the transaction that ends it, that an alert of an episode ended (episodes own that table). */
export type AlertEndedListener = (trx: Trx, episodeId: string, fingerprint: string, status: 'resolved' | 'released', at: string) => Promise<void>;

export interface IntakeDeps {
  normalisers: Normalisers;
  held: HeldRepo;
  firings: FiringsRepo;
  ledger: Ledger;
  clock: Clock;
  /** Names each alert's service (the estate's resolver); by default the alert's own `service`. */
  resolver?: ServiceResolver;
  /** Heartbeats of the alerting pipeline; absent: every alert is held as an alert. */
  heartbeats?: HeartbeatService;
}

export class IntakeService {
  readonly #normalisers: Normalisers;
  readonly #held: HeldRepo;
  readonly #firings: FiringsRepo;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #ended: AlertEndedListener[] = [];
  readonly #changedListeners: Array<() => void> = [];
  readonly #resolver: ServiceResolver;
  readonly #heartbeats: HeartbeatService | null;
  #queue: Pending[] = [];
  #flushing = false;
  /** `via source result` → alerts (a refused push counts once): a closed set of keys, so it stays small. */
  readonly #taken = new Map<string, number>();

  constructor(deps: IntakeDeps) {
    this.#normalisers = deps.normalisers;
    this.#held = deps.held;
    this.#firings = deps.firings;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
    this.#resolver = deps.resolver ?? OWN_SERVICE;
    this.#heartbeats = deps.heartbeats ?? null;
  }

  /** The episodes area subscribes at construction: an alert of an episode ended (same transaction). */
  onAlertEnded(listener: AlertEndedListener): void {
    this.#ended.push(listener);
  }

  /** Called after each commit that changed the held set: the grouping into episodes runs next. */
  onChanged(listener: () => void): void {
    this.#changedListeners.push(listener);
  }

  #changed(): void {
    for (const l of this.#changedListeners) l();
  }

  async #alertEnded(trx: Trx, episodeId: string, fingerprint: string, status: 'resolved' | 'released', at: string): Promise<void> {
    for (const l of this.#ended) await l(trx, episodeId, fingerprint, status, at);
  }

  /** Alerts taken in since start, by source, way in and result. */
  taken(): TakenCount[] {
    return [...this.#taken].map(([key, count]) => {
      const [via, source, result] = key.split(' ') as ['push' | 'poll', string, TakenResult];
      return { source, via, result, count };
    });
  }

  #count(via: 'push' | 'poll', source: string, counts: Partial<Record<TakenResult, number>>): void {
    for (const [result, n] of Object.entries(counts)) {
      if (n === 0) continue;
      const key = `${via} ${source} ${result}`;
      this.#taken.set(key, (this.#taken.get(key) ?? 0) + n);
    }
  }

  async push(source: string, body: unknown, actor: string): Promise<PushResult> {
    const label = this.#normalisers.sourceLabel(source);
    let signals: Signal[];
    try {
      signals = this.#normalisers.normalise(source, body);
    } catch (e) {
      this.#count('push', label, { rejected: 1 });
      if (e instanceof AppError && e.code === 'unreadable_alert') {
        // Nothing of the body is kept: only the fact that it was refused.
        await this.#ledger.append({ type: 'signal.rejected', actor, reason: e.message, data: { source } });
      }
      throw e;
    }
    const { alerts, beats } = await this.#split(source, signals);
    const placed = await place(this.#resolver, alerts);
    const pending: Omit<Pending, 'resolve' | 'reject'> = { source, actor, signals: placed, ...(beats.length === 0 ? {} : { beats }) };
    const counts = await this.#enqueue(pending).catch((e: unknown) => {
      this.#count('push', label, { failed: signals.length });
      throw e;
    });
    this.#count('push', label, counts);
    if (counts.fired + counts.refreshed + counts.resolved > 0) this.#changed();
    await this.#heartbeatChanged(pending.changes);
    return { accepted: signals.length, resolved: counts.resolved + counts.unknown_resolved, signals: [...placed, ...beats] };
  }

  /** The heartbeats among a push's alerts (never held as alerts), and the rest. */
  async #split(source: string, signals: Signal[]): Promise<{ alerts: Signal[]; beats: Signal[] }> {
    const hb = this.#heartbeats;
    if (hb === null) return { alerts: signals, beats: [] };
    await hb.ready();
    if (!signals.some((s) => hb.isBeat(source, s.name))) return { alerts: signals, beats: [] };
    return { alerts: signals.filter((s) => !hb.isBeat(source, s.name)), beats: signals.filter((s) => hb.isBeat(source, s.name)) };
  }

  /** Raises or clears the service's own alert about heartbeats that stopped or came back. */
  async #heartbeatChanged(changes: HeartbeatChange[] | undefined): Promise<void> {
    if (changes === undefined || changes.length === 0 || this.#heartbeats === null) return;
    await this.takeRaised(changes.map((c) => this.#heartbeats!.alertOf(c)));
  }

  /** The tick's share: heartbeats past their timeout raise the service's own alert (one host each). */
  async checkHeartbeats(): Promise<number> {
    if (this.#heartbeats === null) return 0;
    const changes = await this.#heartbeats.check();
    await this.#heartbeatChanged(changes);
    return changes.length;
  }

  /**
   * Alerts the service raises itself (a heartbeat of the pipeline missing, or back): placed and
   * held like any alert, so the estate can link them and an episode opens after the debounce;
   * recorded as `signal.raised`.
   */
  async takeRaised(signals: Signal[]): Promise<void> {
    const placed = await place(this.#resolver, signals);
    const counts = await this.#enqueue({ source: placed[0]?.labels.siem ?? 'service', actor: 'system', signals: placed, raised: true });
    if (counts.fired + counts.refreshed + counts.resolved > 0) this.#changed();
  }

  /**
   * Group commit: every push waiting when a commit starts goes into it, each with its own
   * `signal.pushed` event, so concurrent pushes cost one transaction instead of one each. When a
   * shared commit fails, each push is tried again alone, so one push never fails another.
   */
  async #flush(): Promise<void> {
    while (this.#queue.length > 0) {
      let alerts = 0;
      let n = 0;
      while (n < this.#queue.length && n < MAX_PUSHES && (n === 0 || alerts + this.#queue[n]!.signals.length <= MAX_ALERTS))
        alerts += this.#queue[n++]!.signals.length;
      const batch = this.#queue.splice(0, n);
      try {
        const results = await this.#commit(batch);
        batch.forEach((p, i) => p.resolve(results[i]!));
      } catch (e) {
        if (batch.length === 1) batch[0]!.reject(e);
        else {
          for (const p of batch)
            await this.#commit([p]).then(
              (r) => p.resolve(r[0]!),
              (err: unknown) => p.reject(err),
            );
        }
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.#flushing = false;
  }

  /** One transaction: the held-set changes of every push in order, then their events. */
  async #commit(batch: Pending[]): Promise<Counts[]> {
    const nowDate = this.#clock.now();
    const now = nowDate.toISOString();
    return this.#ledger.transact(
      async (trx, record) => {
        const known = await this.#held.lockMany(trx, [...new Set(batch.flatMap((p) => p.signals.map((s) => s.fingerprint)))]);
        const before = new Map(known);
        const changed = new Map<string, HeldAlert>();
        const started: string[] = [];
        const ended: HeldAlert[] = [];
        const events: EventInput[] = [];
        for (const p of batch) if (p.beats !== undefined) p.changes = await this.#heartbeats!.seen(trx, record, p.source, p.beats, nowDate.getTime());
        const results = batch.map((p) => {
          const { source, actor, signals, polled } = p;
          const counts: Counts = { fired: 0, refreshed: 0, resolved: 0, unknown_resolved: 0 };
          for (const s of signals) {
            const held = known.get(s.fingerprint);
            let next: HeldAlert;
            if (s.status === 'firing') {
              // A re-send keeps its episode and its debounce start; a new firing starts both afresh.
              const refresh = held?.status === 'firing';
              next = {
                fingerprint: s.fingerprint,
                source: s.labels.siem ?? source,
                name: s.name,
                severity: s.severity,
                status: 'firing',
                service: s.service,
                labels: s.labels,
                summary: s.summary,
                first_seen: held?.first_seen ?? now,
                last_seen: now,
                ended_at: null,
                fired_at: refresh ? held.fired_at : now,
                episode_id: refresh ? held.episode_id : null,
                context: s.context ?? null,
              };
              if (refresh) counts.refreshed++;
              else {
                counts.fired++;
                started.push(s.fingerprint);
              }
            } else if (
              held?.status === 'firing' &&
              (polled === undefined || !polled.absent.has(s.fingerprint) || held.labels[POLLER_LABEL] === polled.connector)
            ) {
              next = { ...held, status: 'resolved', last_seen: now, ended_at: now };
              if (held.episode_id !== null) ended.push(held);
              counts.resolved++;
            } else {
              counts.unknown_resolved++;
              continue;
            }
            known.set(s.fingerprint, next);
            changed.set(s.fingerprint, next);
          }
          const fingerprints = signals.slice(0, LISTED).map((s) => s.fingerprint);
          const unplaced = unplacedOf(signals);
          const beats = p.beats === undefined ? {} : { heartbeats: p.beats.length };
          if (p.raised === true) {
            events.push({
              type: 'signal.raised',
              actor,
              reason: `${signals.length} alert(s) raised by the service: ${[...new Set(signals.map((s) => `${s.name} ${s.status}`))].join(', ')}`,
              data: { source, ...counts, fingerprints },
            });
          } else if (polled === undefined) {
            events.push({
              type: 'signal.pushed',
              actor,
              reason: `${signals.length} alert(s) from ${source}`,
              data: { source, ...counts, ...beats, fingerprints, listed_all: signals.length <= LISTED, ...unplaced },
            });
          } else {
            const returned = signals.length - polled.absent.size;
            events.push({
              type: 'signal.polled',
              actor,
              reason: `${returned} alert(s) polled from connector ${polled.connector} (${source}), ${polled.absent.size} no longer returned`,
              data: {
                source,
                connector: polled.connector,
                returned,
                absent: polled.absent.size,
                ...counts,
                fingerprints,
                listed_all: signals.length <= LISTED,
                ...unplaced,
              },
            });
          }
          return counts;
        });
        // Plain re-sends (most of the traffic) only move last_seen; everything else is written whole.
        const touched: string[] = [];
        const written: HeldAlert[] = [];
        for (const a of changed.values()) {
          const was = before.get(a.fingerprint);
          if (was !== undefined && onlyLastSeenMoved(was, a)) touched.push(a.fingerprint);
          else written.push(a);
        }
        if (touched.length > 0) await this.#held.touch(trx, touched, now);
        if (written.length > 0) await this.#held.upsert(trx, written);
        if (started.length > 0) await this.#firings.record(trx, started, nowDate.getTime());
        for (const a of ended) await this.#alertEnded(trx, a.episode_id!, a.fingerprint, 'resolved', now);
        await record(events);
        return results;
      },
      { headFirst: true },
    );
  }

  /**
   * Takes the alerts one successful poll of a connector returned (`kind` is its kind, the source
   * word): they go through the same checks, fingerprints and group commit as pushes, and firing
   * alerts held from this connector (`labels.poller`) that the poll no longer returned are
   * resolved in the same transaction. One `signal.polled` event per poll that returned or
   * resolved anything; a poll that returned nothing and had nothing to resolve writes nothing.
   * Throws 400 `unreadable_alert` (nothing taken) when an alert is not in the common shape.
   */
  async takePolled(connector: string, kind: string, alerts: unknown[]): Promise<PolledResult> {
    const { alerts: polledAlerts, beats } = await this.#split(kind, this.#normalisers.polled(kind, connector, alerts));
    const signals = await place(this.#resolver, polledAlerts);
    const seen = new Set(signals.map((s) => s.fingerprint));
    const absent: Signal[] = (await this.#held.list('firing'))
      .filter((a) => a.labels[POLLER_LABEL] === connector && !seen.has(a.fingerprint))
      .map((a) => ({
        fingerprint: a.fingerprint,
        name: a.name,
        severity: a.severity,
        status: 'resolved',
        service: a.service,
        labels: a.labels,
        summary: a.summary,
        id: null,
      }));
    if (signals.length + absent.length + beats.length === 0) return { returned: 0, fired: 0, refreshed: 0, resolved: 0 };
    const label = this.#normalisers.sourceLabel(kind);
    const pending: Omit<Pending, 'resolve' | 'reject'> = {
      source: kind,
      actor: `poller:${connector}`,
      signals: [...signals, ...absent],
      polled: { connector, absent: new Set(absent.map((a) => a.fingerprint)) },
      ...(beats.length === 0 ? {} : { beats }),
    };
    const counts = await this.#enqueue(pending).catch((e: unknown) => {
      this.#count('poll', label, { failed: signals.length + absent.length });
      throw e;
    });
    this.#count('poll', label, counts);
    if (counts.fired + counts.refreshed + counts.resolved > 0) this.#changed();
    await this.#heartbeatChanged(pending.changes);
    return { returned: signals.length, fired: counts.fired, refreshed: counts.refreshed, resolved: counts.resolved };
  }

  /** Queues `p` for the next group commit (the same object: the commit sets its `changes`). */
  #enqueue(p: Omit<Pending, 'resolve' | 'reject'>): Promise<Counts> {
    return new Promise<Counts>((resolve, reject) => {
      this.#queue.push(Object.assign(p, { resolve, reject }));
      if (!this.#flushing) {
        this.#flushing = true;
        setImmediate(() => void this.#flush());
      }
    });
  }

  /** Releases firing alerts not sent again for 4 hours, with one ledger event per batch. */
  async releaseStale(): Promise<number> {
    const cutoff = new Date(this.#clock.now().getTime() - HOLD_MS).toISOString();
    const now = this.#clock.now().toISOString();
    let total = 0;
    for (;;) {
      const released = await this.#ledger.transact(
        async (trx, record) => {
          const stale = await this.#held.staleFiring(trx, cutoff, RELEASE_BATCH);
          for (const a of stale) {
            await this.#held.update(trx, { ...a, status: 'released', ended_at: now });
            if (a.episode_id !== null) await this.#alertEnded(trx, a.episode_id, a.fingerprint, 'released', now);
          }
          if (stale.length > 0) {
            await record({
              type: 'signal.released',
              actor: 'system',
              reason: `${stale.length} alert(s) not sent again for 4 hours`,
              data: { count: stale.length, fingerprints: stale.slice(0, LISTED).map((a) => a.fingerprint) },
            });
          }
          return stale.length;
        },
        { headFirst: true },
      );
      total += released;
      if (released > 0) this.#changed();
      if (released < RELEASE_BATCH) return total;
    }
  }
}

/** Alerts left unplaced with a reason (a probe of an address no service has), for the push's event: at most 10. */
function unplacedOf(signals: Signal[]): { unplaced?: Array<{ fingerprint: string; name: string; why: string }> } {
  const out: Array<{ fingerprint: string; name: string; why: string }> = [];
  for (const s of signals) {
    if (s.unplaced === undefined) continue;
    out.push({ fingerprint: s.fingerprint, name: s.name, why: s.unplaced });
    if (out.length >= 10) break;
  }
  return out.length === 0 ? {} : { unplaced: out };
}
