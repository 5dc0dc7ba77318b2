import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import cron, { type ScheduledTask } from 'node-cron';
import { SECOND, type Clock } from '../clock.ts';
import type { ConnectorService } from '../connectors/connectors.service.ts';
import type { IntakeService, PolledResult } from '../intake/intake.service.ts';
import type { Logger } from '../log.ts';
import type { LeaseRepo } from './lease.repo.ts';

/** How often a connector is polled unless its `poll_s` setting says otherwise. */
export const DEFAULT_POLL_S = 60;
/** The scheduler's heartbeat (node-cron, with seconds): every 5 s it polls the connectors that are due. */
export const HEARTBEAT = '*/5 * * * * *';
/** The lease of a connector's polls is named `poll:<connector>`. */
/** One polled connector as GET /v1/live shows it. */
export interface PollSchedule {
  connector: string;
  kind: string;
  every_s: number;
  /** A poll of it runs in this process right now. */
  polling_here: boolean;
  /** The process that took its last turn, and when the next turn is due. */
  last_by: string | null;
  next_at: string | null;
}

export const leaseName = (connector: string): string => `poll:${connector}`;

/** What one connector's turn came to. */
export interface PollOutcome {
  connector: string;
  /** False when it was not this process's turn: not due yet, or another host process has it. */
  polled: boolean;
  /** Polled only: whether the poll worked; its problem otherwise. */
  ok?: boolean;
  problem?: string | null;
  /** Polled and ok: what the alerts did to the held set. */
  result?: PolledResult;
}

export interface PollerDeps {
  connectors: ConnectorService;
  intake: IntakeService;
  leases: LeaseRepo;
  clock: Clock;
  log: Logger;
  /** Whether the service is `operating`; nothing is polled before (as pushes answer 503). Default: always. */
  operating?: () => Promise<boolean>;
  /** This host process's name on leases; default `<hostname>:<pid>:<random>`. */
  holder?: string;
}

/**
 * Polls every connector whose kind can `pollAlerts` and hands what it answers to the intake.
 *
 * node-cron runs a heartbeat every 5 s; at each beat a connector is polled when it is due: its
 * lease (`poll:<name>` in the `leases` table) is free or has expired on the injected clock.
 * Taking the lease (one conditional statement) sets it to expire one poll interval later
 * (`poll_s`, default 60 s), so of several host processes on one database exactly one polls
 * each connector once per interval. A failed poll still used its turn: it is tried again at the
 * next interval, and in the meantime the connector shows the problem.
 */
export class Poller {
  readonly holder: string;
  readonly #connectors: ConnectorService;
  readonly #intake: IntakeService;
  readonly #leases: LeaseRepo;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #operating: () => Promise<boolean>;
  readonly #running = new Map<string, Promise<PollOutcome>>();
  #task: ScheduledTask | null = null;
  #stopped = false;
  /** Heartbeats under way (their reads of the connectors come before any poll starts). */
  readonly #beats = new Set<Promise<unknown>>();

  constructor(deps: PollerDeps) {
    this.#connectors = deps.connectors;
    this.#intake = deps.intake;
    this.#leases = deps.leases;
    this.#clock = deps.clock;
    this.#log = deps.log.child({ component: 'poller' });
    this.#operating = deps.operating ?? (async () => true);
    this.holder = deps.holder ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  }

  /** Starts the heartbeat (idempotent; not after stop). */
  start(): void {
    if (this.#task !== null || this.#stopped) return;
    this.#task = cron.schedule(
      HEARTBEAT,
      () => {
        const beat = this.pollNow().then(
          () => undefined,
          (err: unknown) => this.#log.error({ err }, 'polling failed'),
        );
        this.#beats.add(beat);
        return beat.finally(() => this.#beats.delete(beat));
      },
      {
        name: `poller:${this.holder}`,
        noOverlap: true,
        unref: true,
        suppressMissedWarning: true,
      },
    );
  }

  /** Stops the heartbeat and waits for polls under way. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#task !== null) {
      await this.#task.destroy();
      this.#task = null;
    }
    await Promise.allSettled([...this.#beats, ...this.#running.values()]);
  }

  /**
   * Runs one beat now: polls every pollable connector (or only `connector`) that is due, and
   * waits for polls already under way in this process. Nothing until the service is operating,
   * nor after `stop`. What the heartbeat calls; tests call it after moving the clock.
   */
  async pollNow(connector?: string): Promise<PollOutcome[]> {
    if (this.#stopped || !(await this.#operating())) return [];
    const all = await this.#connectors.pollable();
    const chosen = connector === undefined ? all : all.filter((c) => c.name === connector);
    return Promise.all(chosen.map((c) => this.#turn(c.name, (c.poll_s ?? DEFAULT_POLL_S) * SECOND)));
  }

  /** What polls exist and where each stands (GET /v1/live). */
  async schedule(): Promise<PollSchedule[]> {
    const all = await this.#connectors.pollable();
    return Promise.all(
      all.map(async (c) => {
        const lease = await this.#leases.get(leaseName(c.name));
        return {
          connector: c.name,
          kind: c.kind,
          every_s: c.poll_s ?? DEFAULT_POLL_S,
          polling_here: this.#running.has(c.name),
          last_by: lease?.holder ?? null,
          next_at: lease === null ? null : new Date(lease.until_ms).toISOString(),
        };
      }),
    );
  }

  #turn(name: string, intervalMs: number): Promise<PollOutcome> {
    const under = this.#running.get(name);
    if (under !== undefined) return under;
    const p = this.#pollIfDue(name, intervalMs)
      .catch((err: unknown): PollOutcome => {
        this.#log.error({ err, connector: name }, 'poll failed');
        return { connector: name, polled: true, ok: false, problem: err instanceof Error ? err.message : String(err) };
      })
      .finally(() => this.#running.delete(name));
    this.#running.set(name, p);
    return p;
  }

  async #pollIfDue(name: string, intervalMs: number): Promise<PollOutcome> {
    const now = this.#clock.now().getTime();
    const lease = await this.#leases.get(leaseName(name));
    // Due when nobody holds an unexpired lease; then the conditional take decides who polls.
    if (lease !== null && lease.until_ms > now) return { connector: name, polled: false };
    if (!(await this.#leases.take(leaseName(name), this.holder, intervalMs, now))) return { connector: name, polled: false };
    const outcome = await this.#connectors.poll(name, (kind, alerts) => this.#intake.takePolled(name, kind, alerts));
    if (!outcome.ok) return { connector: name, polled: true, ok: false, problem: outcome.problem };
    this.#log.debug({ connector: name, kind: outcome.kind, took_ms: outcome.took_ms, ...outcome.taken }, 'connector polled');
    return { connector: name, polled: true, ok: true, problem: null, result: outcome.taken };
  }
}
