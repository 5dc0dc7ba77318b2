/**
 * The waves of `bench:investigate` and the watch on their investigations. At most one episode
 * per service is open at a time (the database enforces it), so N episodes over S services are
 * N / S waves: each wave fires one alert per service (generic alerts, new ids), waits until every
 * service has a new episode open (after SERVICE_DEBOUNCE_S), resolves the alerts and waits until
 * those episodes have closed, then the next wave fires. The watch polls each episode
 * (`GET /v1/episodes/{id}`) until its investigation has finished.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FleetService } from './fleet.ts';
import { call, expect } from './service.ts';

/** The generic source the waves push to (`POST /v1/alerts/<source>`); the intake load uses `alertmanager`. */
export const WAVE_SOURCE = 'bench';

/** When a wave's steps happened, in seconds after the first push. */
export interface WaveTimes {
  wave: number;
  fired_s: number;
  all_open_s: number;
  all_closed_s: number;
}

/** An episode of a wave, as the watch last read it. */
export interface Watched {
  id: string;
  service: string;
  wave: number;
  t_open: string;
  state: string;
  finished_at: string | null;
  holds: string[];
  /** `took_ms`: how long the check ran (0 for a cause that could not run). */
  verdicts: Array<{ cause: string; verdict: string; obstacle: string | null; took_ms: number }>;
}

interface ListedEpisode {
  id: string;
  service: string;
  t_open: string;
}
interface EpisodeView {
  investigation: { state: string; finished_at: string | null } | null;
  verdicts: Array<{ cause: string; verdict: string; obstacle: string | null; took_ms: number }>;
  diagnosis: { holds: string[] } | null;
}

/** A wave's alerts for every service, firing or resolved, as one generic push body. */
function waveBody(services: FleetService[], wave: number, status: 'firing' | 'resolved') {
  return {
    alerts: services.map((s) => ({
      id: `w${wave}-${s.name}`,
      name: s.alert,
      severity: 'critical',
      status,
      service: s.name,
      labels: { env: 'bench', wave: String(wave) },
      summary: s.summary,
    })),
  };
}

/** The open episodes of the fleet's services (`svc-*`). */
async function openEpisodes(base: string, token: string): Promise<ListedEpisode[]> {
  const q = encodeURIComponent('service:svc-* state:open');
  const body = await expect<{ episodes: ListedEpisode[] }>('the open episodes', 200, call(base, 'GET', `/v1/episodes?query=${q}&limit=500`, token));
  return body.episodes;
}

/** Polls until `done` says yes (every 50 ms), or throws after `timeoutMs`. */
async function until<T>(what: string, timeoutMs: number, done: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await done();
    if (v !== null) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * Pushes `waves` waves back to back, handing each new episode to `opened` as soon as it is seen;
 * `t0` is the first push's time (epoch ms). Each wait is bounded by `stepTimeoutMs`.
 */
export async function pushWaves(o: {
  base: string;
  adminToken: string;
  ingestToken: string;
  services: FleetService[];
  waves: number;
  t0: number;
  stepTimeoutMs: number;
  opened: (e: ListedEpisode & { wave: number }) => void;
  log: (s: string) => void;
}): Promise<WaveTimes[]> {
  const since = (t: number) => Math.round((t - o.t0) / 10) / 100;
  const names = new Set(o.services.map((s) => s.name));
  const seen = new Set<string>();
  const times: WaveTimes[] = [];
  for (let wave = 0; wave < o.waves; wave++) {
    const fired = Date.now();
    await expect(`wave ${wave} firing`, 202, call(o.base, 'POST', `/v1/alerts/${WAVE_SOURCE}`, o.ingestToken, waveBody(o.services, wave, 'firing')));
    const ids = new Set<string>();
    await until(`wave ${wave}'s ${names.size} episodes to open`, o.stepTimeoutMs, async () => {
      for (const e of await openEpisodes(o.base, o.adminToken)) {
        if (!names.has(e.service) || seen.has(e.id)) continue;
        seen.add(e.id);
        ids.add(e.id);
        o.opened({ ...e, wave });
      }
      return ids.size >= names.size ? true : null;
    });
    const allOpen = Date.now();
    await expect(`wave ${wave} resolving`, 202, call(o.base, 'POST', `/v1/alerts/${WAVE_SOURCE}`, o.ingestToken, waveBody(o.services, wave, 'resolved')));
    await until(`wave ${wave}'s episodes to close`, o.stepTimeoutMs, async () =>
      (await openEpisodes(o.base, o.adminToken)).some((e) => ids.has(e.id)) ? null : true,
    );
    const closed = Date.now();
    const t = { wave, fired_s: since(fired), all_open_s: since(allOpen), all_closed_s: since(closed) };
    times.push(t);
    o.log(`  wave ${wave}: fired at ${t.fired_s} s, all ${names.size} open at ${t.all_open_s} s, all closed at ${t.all_closed_s} s`);
  }
  return times;
}

/**
 * Watches episodes' investigations: `add` an episode as it opens; `run` reads unfinished ones
 * (`GET /v1/episodes/{id}`) until `total` have finished (`diagnosed` or `skipped`), or the
 * deadline (epoch ms) passes, and answers every episode as last read. The host takes
 * investigations in the order they were asked for (the opening order), so each round reads the
 * unfinished episodes oldest first, one request at a time, and stops at the second one still
 * unfinished, then waits 250 ms: the watch costs the service about one read per episode, not
 * one per episode per round. The figures come from `investigation.finished_at`, so when the
 * watch notices a finish does not change them.
 */
export class InvestigationWatch {
  readonly #base: string;
  readonly #token: string;
  readonly #episodes = new Map<string, Watched>();
  /** When the watch saw the last investigation finish (epoch ms). */
  lastSeenDoneAt: number | null = null;
  /** Episode reads made. */
  reads = 0;

  constructor(base: string, adminToken: string) {
    this.#base = base;
    this.#token = adminToken;
  }

  add(e: ListedEpisode & { wave: number }): void {
    this.#episodes.set(e.id, { ...e, state: 'pending', finished_at: null, holds: [], verdicts: [] });
  }

  get episodes(): Watched[] {
    return [...this.#episodes.values()];
  }

  #finished(w: Watched): boolean {
    return w.state === 'diagnosed' || w.state === 'skipped';
  }

  async #read(w: Watched): Promise<void> {
    const v = await expect<EpisodeView>(`episode ${w.id}`, 200, call(this.#base, 'GET', `/v1/episodes/${w.id}`, this.#token));
    this.reads++;
    w.state = v.investigation?.state ?? 'none';
    w.finished_at = v.investigation?.finished_at ?? null;
    w.holds = v.diagnosis?.holds ?? [];
    w.verdicts = v.verdicts.map((x) => ({ cause: x.cause, verdict: x.verdict, obstacle: x.obstacle, took_ms: x.took_ms }));
  }

  async run(total: number, deadline: number, progress: (done: number, known: number) => void): Promise<Watched[]> {
    let reported = -1;
    for (;;) {
      const open = this.episodes.filter((w) => !this.#finished(w)).sort((a, b) => Date.parse(a.t_open) - Date.parse(b.t_open) || a.id.localeCompare(b.id));
      let stillOpen = 0;
      for (const w of open) {
        await this.#read(w);
        if (!this.#finished(w) && ++stillOpen >= 2) break;
      }
      const done = this.episodes.filter((w) => this.#finished(w)).length;
      if (done !== reported) {
        reported = done;
        progress(done, this.#episodes.size);
      }
      if (done >= total) {
        this.lastSeenDoneAt = Date.now();
        return this.episodes;
      }
      if (Date.now() > deadline) return this.episodes;
      await sleep(250);
    }
  }
}
