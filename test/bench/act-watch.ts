/**
 * `bench:act`'s view of the service: it follows the ledger (`GET /v1/ledger?after_seq=…&order=asc`,
 * every 50 ms) and keeps, per episode, the time of each step of the path, as the service recorded
 * it: the alert's arrival (`episode.opened`'s `data.first_fired`, the intake time of its first
 * alert), the opening, the diagnosis, the proposal and policy decision, the rehearsal, and the
 * end of the path's acting part (`action.executed`, or `action.failed`, `action.refused`,
 * `outcome.escalated`; an `approval.requested` ends it for the benchmark too, since an L2 action
 * of a kind safe for L2 should never ask). All figures are differences of ledger times, so how
 * soon the watch notices an event changes none of them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { call, expect } from './service.ts';

const POLL_MS = 50;
const PAGE = 2000;

interface LedgerEvent {
  seq: number;
  at: string;
  type: string;
  actor: string;
  reason: string;
  trace: string | null;
  data: Record<string, unknown>;
}

/** How an episode's path ended its acting part. */
export type PathEnd = 'executed' | 'failed' | 'refused' | 'escalated' | 'asked';

/** One episode's steps, epoch ms of the ledger's times (null: not seen). */
export interface EpisodeSteps {
  id: string;
  service: string;
  arrived_ms: number;
  opened_ms: number;
  diagnosed_ms: number | null;
  proposed_ms: number | null;
  policy_ms: number | null;
  rehearsed_ms: number | null;
  executed_ms: number | null;
  closed_ms: number | null;
  end: PathEnd | null;
  /** The policy decision's reason, and the reason of the end when it is not `executed`. */
  policy: string | null;
  why: string | null;
}

const ms = (iso: unknown): number => (typeof iso === 'string' ? Date.parse(iso) : NaN);

/** Follows the ledger; see the file's comment. */
export class LedgerWatch {
  readonly #base: string;
  readonly #token: string;
  readonly #episodes = new Map<string, EpisodeSteps>();
  #after = 0;
  #stopped = false;
  #loop: Promise<void> | null = null;
  /** Ledger reads made. */
  reads = 0;
  /** Events seen while watching, by type. */
  readonly types = new Map<string, number>();

  constructor(base: string, adminToken: string) {
    this.#base = base;
    this.#token = adminToken;
  }

  /** Starts following from the ledger's current head (earlier events are set-up, not measured). */
  async start(): Promise<void> {
    const head = await expect<{ events: LedgerEvent[] }>('the ledger head', 200, call(this.#base, 'GET', '/v1/ledger?limit=1', this.#token));
    this.#after = head.events[0]?.seq ?? 0;
    this.#loop = (async () => {
      while (!this.#stopped) {
        await this.#poll();
        await sleep(POLL_MS);
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#loop;
  }

  /** Every episode seen, in opening order. */
  get episodes(): EpisodeSteps[] {
    return [...this.#episodes.values()].sort((a, b) => a.opened_ms - b.opened_ms);
  }

  /** The first episode of `service` whose alert arrived at or after `sinceMs`, other than `except`, if seen. */
  episodeOf(service: string, sinceMs: number, except?: string): EpisodeSteps | undefined {
    return this.episodes.find((e) => e.service === service && e.arrived_ms >= sinceMs && e.id !== except);
  }

  async #poll(): Promise<void> {
    for (;;) {
      const page = await expect<{ events: LedgerEvent[]; more: boolean }>(
        'the ledger',
        200,
        call(this.#base, 'GET', `/v1/ledger?after_seq=${this.#after}&order=asc&limit=${PAGE}`, this.#token),
      );
      this.reads++;
      for (const e of page.events) {
        this.#after = Math.max(this.#after, e.seq);
        this.types.set(e.type, (this.types.get(e.type) ?? 0) + 1);
        this.#see(e);
      }
      if (!page.more) return;
    }
  }

  #see(e: LedgerEvent): void {
    if (e.type === 'episode.opened' && e.trace !== null) {
      this.#episodes.set(e.trace, {
        id: e.trace,
        service: String(e.data.service),
        arrived_ms: ms(e.data.first_fired),
        opened_ms: ms(e.at),
        diagnosed_ms: null,
        proposed_ms: null,
        policy_ms: null,
        rehearsed_ms: null,
        executed_ms: null,
        closed_ms: null,
        end: null,
        policy: null,
        why: null,
      });
      return;
    }
    const ep = e.trace === null ? undefined : this.#episodes.get(e.trace);
    if (ep === undefined) return;
    const at = ms(e.at);
    switch (e.type) {
      case 'decision.diagnosed':
        ep.diagnosed_ms = at;
        break;
      case 'decision.proposed':
        ep.proposed_ms = at;
        break;
      case 'decision.policy':
        ep.policy_ms = at;
        ep.policy = e.reason;
        break;
      case 'action.rehearsed':
        ep.rehearsed_ms = at;
        break;
      case 'approval.requested':
        ep.end ??= 'asked';
        ep.why ??= e.reason;
        break;
      case 'action.executed':
        ep.executed_ms = at;
        ep.end ??= 'executed';
        break;
      case 'action.failed':
      case 'action.refused':
        ep.end ??= e.type === 'action.failed' ? 'failed' : 'refused';
        ep.why ??= e.reason;
        break;
      case 'outcome.escalated':
        ep.end ??= 'escalated';
        ep.why ??= e.reason;
        break;
      case 'episode.closed':
        ep.closed_ms = at;
        break;
    }
  }
}
