import type { Trx } from '../storage/db.ts';
import { FLAP_MIN, type FiringsRepo, type NoisyAlert } from './firings.repo.ts';
import type { HeldAlert, HeldRepo, UngroupedService } from './held.repo.ts';

export type { HeldAlert, HeldStatus, UngroupedService } from './held.repo.ts';
export type { NoisyAlert } from './firings.repo.ts';

/** One fingerprint's firings: in the last 7 and 30 days, and whether it is flapping now. */
export interface FiringHistory {
  d7: number;
  d30: number;
  flapping: boolean;
}

/**
 * What other areas may read or mark in the alerts intake holds. Only the intake area's repos
 * touch `held_alerts` and `alert_firings`; episodes, licence limits and the live view
 * go through this.
 */
export interface HeldAlerts {
  /** Services with firing alerts that belong to no episode yet, with the oldest firing. */
  ungroupedByService(): Promise<UngroupedService[]>;
  /** Up to `limit` firing alerts of `service` in no episode, oldest first; locked on MySQL. */
  ungroupedOf(trx: Trx, service: string | null, limit: number): Promise<HeldAlert[]>;
  /** Up to `limit` firing alerts from `source` in no episode, fired by `firedBefore`, but those of the `except` services (and unplaced ones when `exceptUnplaced`); locked on MySQL. */
  ungroupedFrom(trx: Trx, source: string, firedBefore: string, except: string[], exceptUnplaced: boolean, limit: number): Promise<HeldAlert[]>;
  /** Marks the alerts as members of an episode. */
  setEpisode(trx: Trx, fingerprints: string[], episodeId: string): Promise<void>;
  /** Each fingerprint's firing history at `nowMs` (a fingerprint never fired is absent). */
  histories(trx: Trx, fingerprints: string[], nowMs: number): Promise<Map<string, FiringHistory>>;
  /** Every service an alert has named, the first seen first (ties by name). */
  servicesByFirstSeen(): Promise<string[]>;
  /** Firing alerts placed under no service, by source and name, most frequent first (the estate lists them). */
  unplaced(limit: number): Promise<Array<{ source: string; name: string; count: number; last_seen: string }>>;
  /** The services alerts were placed under, with their counts (the estate's build reads them). */
  servicesNamed(): Promise<Array<{ service: string; count: number }>>;
  /** How many alerts are firing now (GET /metrics). */
  firingCount(): Promise<number>;
  /** The alerts that started firing most often in [fromMs, toMs); `unplaced`: only those under no service (the digest). */
  noisiest(fromMs: number, toMs: number, limit: number, unplaced?: boolean): Promise<NoisyAlert[]>;
}

/** The intake area's answer to HeldAlerts, over its own two repos. */
export class IntakeHeldAlerts implements HeldAlerts {
  readonly #d: { held: HeldRepo; firings: FiringsRepo };

  constructor(deps: { held: HeldRepo; firings: FiringsRepo }) {
    this.#d = deps;
  }

  ungroupedByService(): Promise<UngroupedService[]> {
    return this.#d.held.ungroupedByService();
  }

  ungroupedOf(trx: Trx, service: string | null, limit: number): Promise<HeldAlert[]> {
    return this.#d.held.ungroupedOf(trx, service, limit);
  }

  ungroupedFrom(trx: Trx, source: string, firedBefore: string, except: string[], exceptUnplaced: boolean, limit: number): Promise<HeldAlert[]> {
    return this.#d.held.ungroupedFrom(trx, source, firedBefore, except, exceptUnplaced, limit);
  }

  setEpisode(trx: Trx, fingerprints: string[], episodeId: string): Promise<void> {
    return this.#d.held.setEpisode(trx, fingerprints, episodeId);
  }

  async histories(trx: Trx, fingerprints: string[], nowMs: number): Promise<Map<string, FiringHistory>> {
    const counts = await this.#d.firings.counts(trx, fingerprints, nowMs);
    return new Map([...counts].map(([f, c]) => [f, { d7: c.d7, d30: c.d30, flapping: c.flap >= FLAP_MIN }]));
  }

  servicesByFirstSeen(): Promise<string[]> {
    return this.#d.held.servicesByFirstSeen();
  }

  unplaced(limit: number): Promise<Array<{ source: string; name: string; count: number; last_seen: string }>> {
    return this.#d.held.unplaced(limit);
  }

  servicesNamed(): Promise<Array<{ service: string; count: number }>> {
    return this.#d.held.servicesNamed();
  }

  firingCount(): Promise<number> {
    return this.#d.held.firingCount();
  }

  noisiest(fromMs: number, toMs: number, limit: number, unplaced = false): Promise<NoisyAlert[]> {
    return this.#d.firings.noisiest(fromMs, toMs, limit, unplaced);
  }
}
