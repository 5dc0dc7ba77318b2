import { SECOND, type Clock } from '../clock.ts';
import type { TickSeen } from '../doctor/doctor.service.ts';
import type { PollSchedule } from '../schedule/poller.ts';

/** A service with firing alerts no episode has taken yet: its debounce window. */
export interface LiveWindow {
  service: string | null;
  alerts: number;
  opened_at: string;
  /** When the window ends and an episode opens (first firing + SERVICE_DEBOUNCE_S). */
  closes_at: string;
}

export interface LiveEpisode {
  id: string;
  kind: string;
  service: string;
  t_open: string;
  alerts: string[];
}

export interface LiveApproval {
  id: string;
  kind: string;
  service: string;
  summary: string;
  requested_by: string;
  requested_at: string;
  expires_at: string;
}

export interface LiveJob {
  id: string;
  kind: string;
  started_at: string | null;
  progress: unknown;
}

/** GET /v1/live: what runs now. */
export interface LiveReport {
  now: string;
  debounce: LiveWindow[];
  episodes: LiveEpisode[];
  approvals: LiveApproval[];
  /** Running discovery jobs (at most one runs at a time); null when not wired. */
  discovery: LiveJob[] | null;
  /** Polled alert sources and where each stands; null when not wired. */
  polls: PollSchedule[] | null;
  /** Investigations running now (retrieving, checking, diagnosing), oldest first; null when not wired. */
  investigations: LiveInvestigation[] | null;
  /** The study running now (none or one); null when not wired. */
  study: LiveJob[] | null;
  /** Leases some host process holds now, and which (`<host>:<pid>:…`; `here`: this process); null when not wired. */
  leases: LiveLease[] | null;
  tick: TickSeen;
}

/** A lease held now. */
export interface LiveLease {
  name: string;
  holder: string;
  until: string;
  here: boolean;
}

/** An investigation under way. */
export interface LiveInvestigation {
  episode_id: string;
  service: string;
  run: number;
  started_at: string | null;
}

/** Each list is cut at this many entries (the full lists have endpoints of their own). */
export const LIVE_LIMIT = 200;

export interface LiveDeps {
  clock: Clock;
  debounceS: number;
  /** HeldRepo.ungroupedByService() */
  ungrouped(): Promise<Array<{ service: string | null; count: number; first_fired: string }>>;
  openEpisodes(limit: number): Promise<LiveEpisode[]>;
  pendingApprovals(limit: number): Promise<LiveApproval[]>;
  discoveryJobs?(): Promise<LiveJob[]>;
  studies?(): Promise<LiveJob[]>;
  polls?(): Promise<PollSchedule[]>;
  investigations?(limit: number): Promise<LiveInvestigation[]>;
  leases?(): Promise<LiveLease[]>;
  tick(): TickSeen;
}

/** Reads what is under way right now from each area; nothing is stored. */
export class LiveService {
  readonly #d: LiveDeps;

  constructor(deps: LiveDeps) {
    this.#d = deps;
  }

  async live(): Promise<LiveReport> {
    const [groups, episodes, approvals, discovery, polls, investigations, study, leases] = await Promise.all([
      this.#d.ungrouped(),
      this.#d.openEpisodes(LIVE_LIMIT),
      this.#d.pendingApprovals(LIVE_LIMIT),
      this.#d.discoveryJobs === undefined ? Promise.resolve(null) : this.#d.discoveryJobs(),
      this.#d.polls === undefined ? Promise.resolve(null) : this.#d.polls(),
      this.#d.investigations === undefined ? Promise.resolve(null) : this.#d.investigations(LIVE_LIMIT),
      this.#d.studies === undefined ? Promise.resolve(null) : this.#d.studies(),
      this.#d.leases === undefined ? Promise.resolve(null) : this.#d.leases().then((l) => l.slice(0, LIVE_LIMIT)),
    ]);
    const debounce = groups
      .filter((g) => g.first_fired !== '')
      .map((g) => ({
        service: g.service,
        alerts: g.count,
        opened_at: g.first_fired,
        closes_at: new Date(Date.parse(g.first_fired) + this.#d.debounceS * SECOND).toISOString(),
      }))
      .sort((a, b) => (a.opened_at < b.opened_at ? -1 : a.opened_at > b.opened_at ? 1 : 0))
      .slice(0, LIVE_LIMIT);
    return { now: this.#d.clock.now().toISOString(), debounce, episodes, approvals, discovery, polls, investigations, study, leases, tick: this.#d.tick() };
  }
}
