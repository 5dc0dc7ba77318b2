import { createHash } from 'node:crypto';
import { MINUTE, SECOND, type Clock } from '../clock.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { Trx } from '../storage/db.ts';
import type { Heartbeat, HeartbeatsRepo } from './heartbeats.repo.ts';
import type { Signal } from './normalise.ts';

/** Alert names that are heartbeats unless a source's settings say otherwise (Alertmanager's conventions). */
export const DEFAULT_HEARTBEATS = ['Watchdog', 'DeadMansSwitch'] as const;
/** A learned timeout is this many times the interval between arrivals, and at least MIN_LEARNED_MS. */
const LEARNED_FACTOR = 3;
const MIN_LEARNED_MS = 5 * MINUTE;
/** How long the settings are trusted before being read again (another host may have changed them). */
const FRESH_MS = 5 * SECOND;
/** The service an incident about the alerting pipeline is placed under unless the estate links it. */
export const PIPELINE_SERVICE = 'alerting-pipeline';
/** The name of the alert the service raises when a heartbeat stops arriving. */
export const MISSING_ALERT = 'HeartbeatMissing';

/** One source's heartbeat settings: which alert names are heartbeats, and after how long one is missing. */
export interface SourceHeartbeats {
  /** Alert names; `[]`: this source sends no heartbeat (its Watchdog is an ordinary alert). */
  alerts?: string[];
  /** Seconds without an arrival after which it is missing; null or absent: learned (3 × the interval, at least 5 minutes). */
  timeout_s?: number | null;
}

/** The `heartbeats` settings document. */
export interface HeartbeatSettings {
  version: number;
  sources: Record<string, SourceHeartbeats>;
  updated_at: string | null;
  updated_by: string | null;
}

const NAME = 'heartbeats';
const EMPTY: HeartbeatSettings = { version: 0, sources: {}, updated_at: null, updated_by: null };

/** A heartbeat whose state changed: raise (it stopped) or clear (it came back) the alert about it. */
export interface HeartbeatChange {
  source: string;
  name: string;
  change: 'stopped' | 'back';
  last_seen_ms: number;
}

/**
 * Heartbeats of the alerting pipeline, as Alerta keeps them: a dead-man's-switch alert
 * (`Watchdog`, a rule that always fires) is never an incident by itself; each arrival is noted,
 * and when one stops arriving (past its timeout, or its tool says it resolved) the service raises
 * a critical `HeartbeatMissing` alert of its own, cleared when the heartbeat comes back. Owns
 * `heartbeats` (through its repo) and the `heartbeats` settings document. See docs/intake.md.
 */
export class HeartbeatService {
  readonly #repo: HeartbeatsRepo;
  readonly #settings: SettingsStore;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  #doc: HeartbeatSettings = EMPTY;
  #readAt = -Infinity;

  constructor(d: { repo: HeartbeatsRepo; settings: SettingsStore; ledger: Ledger; clock: Clock }) {
    this.#repo = d.repo;
    this.#settings = d.settings;
    this.#ledger = d.ledger;
    this.#clock = d.clock;
  }

  /** Reads the settings when they may have changed (at most every 5 s): call before `isBeat`. */
  async ready(): Promise<void> {
    const now = this.#clock.now().getTime();
    if (now - this.#readAt < FRESH_MS) return;
    this.#doc = (await this.#settings.get<HeartbeatSettings>(NAME)) ?? EMPTY;
    this.#readAt = now;
  }

  /** Whether an alert of this name pushed to `source` is a heartbeat. */
  isBeat(source: string, name: string): boolean {
    const names: readonly string[] = this.#doc.sources[source]?.alerts ?? DEFAULT_HEARTBEATS;
    return names.includes(name);
  }

  /** After how long without an arrival the heartbeat is missing; null while it cannot be known (configured none, one arrival only). */
  timeoutMs(h: Pick<Heartbeat, 'source' | 'interval_ms'>): number | null {
    const set = this.#doc.sources[h.source]?.timeout_s;
    if (typeof set === 'number') return set * SECOND;
    return h.interval_ms === null ? null : Math.max(MIN_LEARNED_MS, LEARNED_FACTOR * h.interval_ms);
  }

  /**
   * Notes heartbeats that arrived in one push (in the push's transaction): a firing one is alive
   * (the interval since the last arrival learned); a resolved one means its tool says it stopped.
   * Answers the changes to act on once committed.
   */
  async seen(trx: Trx, record: RecordEvent, source: string, beats: Signal[], nowMs: number): Promise<HeartbeatChange[]> {
    const out: HeartbeatChange[] = [];
    const latest = new Map<string, Signal>();
    for (const b of beats) latest.set(b.name, b);
    for (const [name, b] of latest) {
      const h = await this.#repo.lock(trx, source, name);
      if (b.status === 'resolved') {
        if (h === null || h.state === 'missing') continue;
        await this.#repo.put(trx, { ...h, state: 'missing', missing_since_ms: nowMs });
        await record(this.#event('signal.heartbeat_missing', h, `${name} from ${source} was resolved by its tool: it stopped firing`, nowMs));
        out.push({ source, name, change: 'stopped', last_seen_ms: h.last_seen_ms });
        continue;
      }
      const interval = h === null || h.state === 'missing' ? (h?.interval_ms ?? null) : nowMs - h.last_seen_ms;
      await this.#repo.put(trx, {
        source,
        name,
        last_seen_ms: nowMs,
        interval_ms: interval !== null && interval > 0 ? interval : (h?.interval_ms ?? null),
        state: 'alive',
        missing_since_ms: null,
      });
      if (h?.state === 'missing') {
        await record(this.#event('signal.heartbeat_back', h, `${name} from ${source} arrives again`, nowMs));
        out.push({ source, name, change: 'back', last_seen_ms: nowMs });
      }
    }
    return out;
  }

  /** The tick's share: heartbeats past their timeout become missing (one host each). Answers them. */
  async check(): Promise<HeartbeatChange[]> {
    await this.ready();
    const now = this.#clock.now().getTime();
    const out: HeartbeatChange[] = [];
    for (const h of await this.#repo.alive()) {
      const timeout = this.timeoutMs(h);
      if (timeout === null || h.last_seen_ms + timeout > now) continue;
      const marked = await this.#ledger.transact(async (trx, record) => {
        if (!(await this.#repo.markMissing(trx, h, now))) return false;
        await record(
          this.#event(
            'signal.heartbeat_missing',
            h,
            `no ${h.name} from ${h.source} for ${Math.round((now - h.last_seen_ms) / SECOND)} s (timeout ${timeout / SECOND} s)`,
            now,
          ),
        );
        return true;
      });
      if (marked) out.push({ source: h.source, name: h.name, change: 'stopped', last_seen_ms: h.last_seen_ms });
    }
    return out;
  }

  /** The alert the service raises (firing) or clears (resolved) for a change: one fingerprint per heartbeat. */
  alertOf(c: HeartbeatChange): Signal {
    const since = new Date(c.last_seen_ms).toISOString();
    return {
      fingerprint: `heartbeat-${createHash('sha256').update(`${c.source}\n${c.name}`).digest('hex').slice(0, 24)}`,
      name: MISSING_ALERT,
      severity: 'critical',
      status: c.change === 'stopped' ? 'firing' : 'resolved',
      service: PIPELINE_SERVICE,
      labels: { heartbeat: c.name, source: c.source, siem: c.source },
      summary: `No ${c.name} from ${c.source} since ${since}: the alerting pipeline that sends it (rules, Alertmanager, the push to this service) may be broken, so real alerts may not arrive either`,
      id: null,
    };
  }

  /** The settings and every heartbeat's state (GET /v1/settings/heartbeats). */
  async view(): Promise<Record<string, unknown>> {
    await this.ready();
    const beats = await this.#repo.all();
    return {
      ...this.#doc,
      defaults: {
        alerts: [...DEFAULT_HEARTBEATS],
        timeout: `learned: ${LEARNED_FACTOR} × the interval between arrivals, at least ${MIN_LEARNED_MS / MINUTE} minutes`,
      },
      heartbeats: beats.map((h) => {
        const timeout = this.timeoutMs(h);
        return {
          source: h.source,
          name: h.name,
          state: h.state,
          last_seen: new Date(h.last_seen_ms).toISOString(),
          interval_s: h.interval_ms === null ? null : Math.round(h.interval_ms / SECOND),
          timeout_s: timeout === null ? null : Math.round(timeout / SECOND),
          missing_since: h.missing_since_ms === null ? null : new Date(h.missing_since_ms).toISOString(),
        };
      }),
    };
  }

  /** Replaces the settings (PUT /v1/settings/heartbeats), recorded as `config.heartbeats_saved`. */
  async put(sources: Record<string, SourceHeartbeats>, by: string): Promise<Record<string, unknown>> {
    const at = this.#clock.now().toISOString();
    await this.#ledger.transact(async (trx, record) => {
      const before = (await this.#settings.get<HeartbeatSettings>(NAME, trx)) ?? EMPTY;
      const doc: HeartbeatSettings = { version: before.version + 1, sources, updated_at: at, updated_by: by };
      await this.#settings.put(trx, NAME, doc, at);
      await record({
        type: 'config.heartbeats_saved',
        actor: by,
        reason: `heartbeat settings of ${Object.keys(sources).length} source(s) saved`,
        data: { version: doc.version, sources },
      });
    });
    this.#readAt = -Infinity;
    return this.view();
  }

  #event(type: string, h: Pick<Heartbeat, 'source' | 'name' | 'last_seen_ms'>, reason: string, nowMs: number) {
    return {
      type,
      actor: 'system',
      reason,
      data: { source: h.source, heartbeat: h.name, last_seen: new Date(h.last_seen_ms).toISOString(), at: new Date(nowMs).toISOString() },
    };
  }
}
