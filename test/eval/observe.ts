/**
 * What the eval reads while a run goes on, only through the outside interfaces: the service's
 * episodes (`GET /v1/episodes`, `GET /v1/episodes/{id}` with the admin token) and Alertmanager's
 * active alerts (`GET /api/v2/alerts`, for each alert's `startsAt`, which the service does not keep).
 */

/** An episode as `GET /v1/episodes/{id}` answers it: the fields the eval reads. */
export interface EpisodeView {
  id: string;
  kind: string;
  state: string;
  service: string;
  alerts: string[];
  note: string | null;
  t_open: string;
  outcome: string | null;
  signals: Array<{ fingerprint: string; name: string; labels: Record<string, string>; joined_at: string }>;
  investigation: { state: string; run: number } | null;
  verdicts: Array<{ cause: string; verdict: string; reason: string; obstacle: string | null }>;
  diagnosis: { holds: string[]; unknown: string[]; summary: string } | null;
  proposal: { action: string; connector: string; params: Record<string, unknown> } | null;
  rehearsal: { ok: boolean | null; shown?: string; problem?: string } | null;
  policy_decision: { decision: string; reason: string } | null;
  path_state?: string | null;
  timeline: Array<{ seq: number; at: string; type: string; data: Record<string, unknown> }>;
}

/** An alert as Alertmanager's API answers it. */
export interface AmAlert {
  labels: Record<string, string>;
  startsAt: string;
}

export class Observer {
  readonly #base: string;
  readonly #token: string;
  readonly #alertmanager: string;
  /** Episodes by id, as last read. */
  readonly episodes = new Map<string, EpisodeView>();
  /** Every alert Alertmanager held at some read, by its label set: the earliest `startsAt` seen. */
  readonly alerts = new Map<string, AmAlert>();
  /** How many reads of the service's API the eval made. */
  reads = 0;
  /** The service's heartbeat events (`signal.heartbeat_missing`, `signal.heartbeat_back`), as last read. */
  heartbeatEvents: Array<{ type: string; at: string; reason: string }> = [];

  constructor(o: { base: string; adminToken: string; alertmanager: string }) {
    this.#base = o.base;
    this.#token = o.adminToken;
    this.#alertmanager = o.alertmanager;
  }

  async #get<T>(path: string): Promise<T> {
    const r = await fetch(`${this.#base}${path}`, { headers: { authorization: `Bearer ${this.#token}` } });
    if (!r.ok) throw new Error(`GET ${path}: ${r.status} ${await r.text()}`);
    this.reads++;
    return (await r.json()) as T;
  }

  /** One read of everything: the episode list, each episode whole, Alertmanager's alerts. */
  async poll(): Promise<void> {
    const list = await this.#get<{ episodes: Array<{ id: string }> }>('/v1/episodes?limit=500');
    const details = await Promise.all(list.episodes.map((e) => this.#get<EpisodeView>(`/v1/episodes/${e.id}`)));
    for (const d of details) this.episodes.set(d.id, d);
    this.heartbeatEvents = (
      await this.#get<{ events: Array<{ type: string; at: string; reason: string }> }>('/v1/ledger?type=signal.heartbeat_&limit=100')
    ).events;
    const r = await fetch(`${this.#alertmanager}/api/v2/alerts`).catch(() => null);
    if (r?.ok === true) {
      for (const a of (await r.json()) as AmAlert[]) {
        const key = labelKey(a.labels);
        const had = this.alerts.get(key);
        if (had === undefined || Date.parse(a.startsAt) < Date.parse(had.startsAt)) this.alerts.set(key, { labels: a.labels, startsAt: a.startsAt });
      }
    }
  }

  /**
   * When the service first took in each fingerprint (ms): the ledger's `signal.pushed` (a webhook
   * push) and `signal.polled` (its Alertmanager connector's poll, which can come first) events.
   */
  async arrivals(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    let after = 0;
    for (;;) {
      const page = await this.#get<{ events: Array<{ seq: number; at: string; data: { fingerprints?: string[] } }>; more: boolean }>(
        `/v1/ledger?type=signal.&order=asc&limit=2000&after_seq=${after}`,
      );
      for (const e of page.events) for (const f of e.data.fingerprints ?? []) if (!out.has(f)) out.set(f, Date.parse(e.at));
      if (!page.more || page.events.length === 0) return out;
      after = page.events[page.events.length - 1]!.seq;
    }
  }

  async ledgerVerifies(): Promise<{ ok: boolean; checked: number }> {
    return this.#get<{ ok: boolean; checked: number }>('/v1/ledger/verify');
  }

  /** The causes of the loaded packs. */
  async causes(): Promise<string[]> {
    const r = await this.#get<{ packs: Array<{ causes: Array<{ id: string }> }> }>('/v1/packs');
    return r.packs.flatMap((p) => p.causes.map((c) => c.id)).sort();
  }
}

export const labelKey = (labels: Record<string, string>): string => JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));

/** Whether `labels` has every label of `want` with the same value. */
export const hasLabels = (labels: Record<string, string>, want: Record<string, string>): boolean => Object.entries(want).every(([k, v]) => labels[k] === v);
