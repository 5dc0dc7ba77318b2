import { HOUR, type Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { HeldAlert, HeldRepo } from './held.repo.ts';
import type { Normalisers, Signal } from './normalise.ts';

/** A firing alert not sent again for this long is released from the held set. */
export const HOLD_MS = 4 * HOUR;
/** At most this many fingerprints are listed in one ledger event; the counts are always whole. */
const LISTED = 100;
const RELEASE_BATCH = 500;

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
 * lost. The held set lives in the database: restarts lose and duplicate nothing.
 */
export class IntakeService {
  readonly #normalisers: Normalisers;
  readonly #held: HeldRepo;
  readonly #ledger: Ledger;
  readonly #clock: Clock;

  constructor(normalisers: Normalisers, held: HeldRepo, ledger: Ledger, clock: Clock) {
    this.#normalisers = normalisers;
    this.#held = held;
    this.#ledger = ledger;
    this.#clock = clock;
  }

  async push(source: string, body: unknown, actor: string): Promise<PushResult> {
    let signals: Signal[];
    try {
      signals = this.#normalisers.normalise(source, body);
    } catch (e) {
      if (e instanceof AppError && e.code === 'unreadable_alert') {
        // Nothing of the body is kept: only the fact that it was refused.
        await this.#ledger.append({ type: 'signal.rejected', actor, reason: e.message, data: { source } });
      }
      throw e;
    }
    const now = this.#clock.now().toISOString();
    const counts = { fired: 0, refreshed: 0, resolved: 0, unknown_resolved: 0 };
    await this.#ledger.transact(async (trx, record) => {
      const known = await this.#held.lockMany(trx, [...new Set(signals.map((s) => s.fingerprint))]);
      for (const s of signals) {
        const held = known.get(s.fingerprint);
        if (s.status === 'firing') {
          const next: HeldAlert = { fingerprint: s.fingerprint, source: s.labels.siem ?? source, name: s.name, severity: s.severity, status: 'firing', service: s.service, labels: s.labels, summary: s.summary, first_seen: held?.first_seen ?? now, last_seen: now, ended_at: null };
          if (held === undefined) await this.#held.insert(trx, next);
          else await this.#held.update(trx, next);
          if (held?.status === 'firing') counts.refreshed++;
          else counts.fired++;
          known.set(s.fingerprint, next);
        } else if (held?.status === 'firing') {
          const next: HeldAlert = { ...held, status: 'resolved', last_seen: now, ended_at: now };
          await this.#held.update(trx, next);
          known.set(s.fingerprint, next);
          counts.resolved++;
        } else {
          counts.unknown_resolved++;
        }
      }
      await record({
        type: 'signal.pushed',
        actor,
        reason: `${signals.length} alert(s) from ${source}`,
        data: { source, ...counts, fingerprints: signals.slice(0, LISTED).map((s) => s.fingerprint), listed_all: signals.length <= LISTED },
      });
    }, { headFirst: true });
    return { accepted: signals.length, resolved: counts.resolved + counts.unknown_resolved, signals };
  }

  /** Releases firing alerts not sent again for 4 hours, with one ledger event per batch. */
  async releaseStale(): Promise<number> {
    const cutoff = new Date(this.#clock.now().getTime() - HOLD_MS).toISOString();
    const now = this.#clock.now().toISOString();
    let total = 0;
    for (;;) {
      const released = await this.#ledger.transact(async (trx, record) => {
        const stale = await this.#held.staleFiring(trx, cutoff, RELEASE_BATCH);
        for (const a of stale) await this.#held.update(trx, { ...a, status: 'released', ended_at: now });
        if (stale.length > 0) {
          await record({ type: 'signal.released', actor: 'system', reason: `${stale.length} alert(s) not sent again for 4 hours`, data: { count: stale.length, fingerprints: stale.slice(0, LISTED).map((a) => a.fingerprint) } });
        }
        return stale.length;
      }, { headFirst: true });
      total += released;
      if (released < RELEASE_BATCH) return total;
    }
  }
}
