import type { CommittedEvent } from '../ledger/ledger.service.ts';

/** One sample of a gauge read at scrape time. */
export interface Sample {
  labels?: Record<string, string>;
  value: number;
}

/**
 * What GET /metrics reads, each figure through a small function of the area that owns it (no
 * area's repo is reached into): read at scrape time, so a figure is as fresh as the scrape.
 * Install-wide figures come from the database and are the same on every host; the counters
 * (requests, alerts taken in, events) are this process's own since it started.
 */
export interface MetricSources {
  /** Readiness (GET /health/ready's answer, reused for a second). */
  readiness(): Promise<{ ready: boolean; reasons: readonly string[] }>;
  ledgerHead(): Promise<{ seq: number }>;
  /** The newest checkpoint, whichever host wrote it; null before the first. */
  lastCheckpoint(): Promise<{ seq: number; at: string } | null>;
  /** This process's last verify, or null when it ran none yet. */
  lastVerify(): { ok: boolean; atMs: number } | null;
  /** Firing alerts in the held set. */
  heldFiring(): Promise<number>;
  /** The services with an open episode. */
  openEpisodes(): Promise<string[]>;
  /** A service's tier (1 to 4) in the estate; null when it has none or is not in the estate. */
  tierOf(service: string): Promise<number | null>;
  investigationsRunning(): Promise<number>;
  investigationsPending(): Promise<number>;
  approvalsPending(): Promise<number>;
  /** Notifications waiting in the outbox. */
  notificationQueue(): Promise<number>;
  /** Every configured connector's kind and the state of its last check. */
  connectors(): Promise<Array<{ kind: string; state: string }>>;
  /** The names of the leases this host holds now. */
  leasesHeld(): Promise<string[]>;
  /** Alerts taken in by this process (intake's own tally). */
  alertsTaken(): ReadonlyArray<{ source: string; via: string; result: string; count: number }>;
  /** Subscribes to the events this process's commits append (the ledger's `onEvents`). */
  onEvents(listener: (events: readonly CommittedEvent[]) => void): void;
}
