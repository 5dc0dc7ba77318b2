import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { LedgerEvent } from '../ledger/entry.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import { type EpisodeRepo } from './episode.repo.ts';
import { severityRank, type Episode, type EpisodeAlert } from './episode.model.ts';
import { parseQuery } from './query/parse.ts';
import type { Diagnosis, Findings, StoredEvidence, StoredVerdict } from '../investigation/findings.model.ts';
import type { ActionPath } from '../acting/paths.model.ts';
import type { StormCounts } from './storm.repo.ts';

export const DEFAULT_EPISODE_PAGE = 50;
export const MAX_EPISODE_PAGE = 500;
/** The timeline of one episode shows at most this many ledger events (the ledger has them all). */
const TIMELINE_MAX = 2000;

/** An episode as the list shows it. */
export type EpisodeSummary = Omit<Episode, 't_open_ms' | 't_close_ms'> & {
  duration_s: number;
  /** The worst severity of its alerts (critical, warning, info); null without alerts. */
  severity: string | null;
  /** A storm episode (kind `storm`): the source it holds alerts of, and how many alerts and services; null for others. */
  storm: StormView | null;
};

/** What a storm episode holds (docs/episodes.md, "Storms"). */
export interface StormView {
  source: string;
  alerts: number;
  services: number;
  /** In the episode in full: the services it holds most alerts of (at most 50), most first. */
  held?: Array<{ service: string; alerts: number }>;
}

/** The storms' counts (host/episodes/storm.repo.ts). */
export interface EpisodeStorms {
  counts(ids: string[]): Promise<Map<string, StormCounts>>;
  top(id: string, limit: number): Promise<Array<{ service: string; alerts: number }>>;
}
const STORM_LISTED = 50;

/** What the investigation found for an episode (its store, host/investigation/findings.repo.ts). */
export interface EpisodeFindings {
  of(episodeId: string): Promise<Findings | null>;
}

/** What the acting path did for an episode (its store, host/acting/paths.repo.ts). */
export interface EpisodeActions {
  pathOf(episodeId: string): Promise<ActionPath | null>;
}

/** One episode in full (GET /v1/episodes/{id}). */
export interface EpisodeDetail extends EpisodeSummary {
  signals: (EpisodeAlert & { labels: Record<string, string>; status: 'firing' | 'resolved' | 'released' })[];
  data: Record<string, string[]>;
  /** The investigation's state (`pending`, `running`, `diagnosed`, `skipped`), or null when none was asked for. */
  investigation: { state: string; run: number; started_at: string | null; finished_at: string | null; note: string | null } | null;
  verdicts: StoredVerdict[];
  evidence: StoredEvidence[];
  diagnosis: Diagnosis | null;
  /** The actions taken (at most one per path today), each `{connector, kind, params, executed_at, ok, shown, problem, undone_at}`. */
  actions: Array<Record<string, unknown>>;
  /** Where the action path stands (`pending`, `awaiting_approval`, `executing`, `verifying`, `done`), or null. */
  path_state: string | null;
  verification: Record<string, unknown> | null;
  proposal: unknown;
  policy_decision: unknown;
  rehearsal: unknown;
  approvals: unknown[];
  timeline: LedgerEvent[];
  timeline_more: boolean;
}

export interface ListRequest {
  limit: number;
  group: 'incident' | null;
  query: string | null;
  cursor: string | null;
}

/** Reads episodes for the API: the filtered, paged list and one episode in full. */
export class EpisodeReader {
  readonly #episodes: EpisodeRepo;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #findings: EpisodeFindings | null;
  readonly #actions: EpisodeActions | null;
  readonly #storms: EpisodeStorms | null;

  constructor(deps: { episodes: EpisodeRepo; ledger: Ledger; clock: Clock; findings?: EpisodeFindings; actions?: EpisodeActions; storms?: EpisodeStorms }) {
    this.#storms = deps.storms ?? null;
    this.#findings = deps.findings ?? null;
    this.#actions = deps.actions ?? null;
    this.#episodes = deps.episodes;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
  }

  async list(r: ListRequest): Promise<{ episodes: EpisodeSummary[]; more: boolean; cursor: string | null }> {
    const nowMs = this.#clock.now().getTime();
    const query = r.query === null ? null : parseQuery(r.query);
    const { episodes, more } = await this.#episodes.list({
      limit: r.limit,
      incidentsOnly: r.group === 'incident',
      query,
      after: decodeCursor(r.cursor),
      nowMs,
    });
    const last = episodes.at(-1);
    const worst = await this.#episodes.worstSeverities(episodes.map((e) => e.id));
    const storms = await this.#stormCounts(episodes);
    return {
      episodes: episodes.map((e) => summary(e, nowMs, worst.get(e.id) ?? null, storms.get(e.id) ?? null)),
      more,
      cursor: more && last !== undefined ? encodeCursor(last) : null,
    };
  }

  async #stormCounts(episodes: Episode[]): Promise<Map<string, StormView>> {
    const ids = episodes.filter((e) => e.kind === 'storm').map((e) => e.id);
    if (ids.length === 0 || this.#storms === null) return new Map();
    const counts = await this.#storms.counts(ids);
    return new Map(
      episodes
        .filter((e) => e.kind === 'storm')
        .map((e) => [e.id, { source: e.service.replace(/^storm:/, ''), alerts: counts.get(e.id)?.alerts ?? 0, services: counts.get(e.id)?.services ?? 0 }]),
    );
  }

  async get(id: string): Promise<EpisodeDetail> {
    const episode = await this.#episodes.get(id);
    if (episode === null) throw new AppError('not_found', 'no such episode');
    const [alerts, data, timeline, findings] = await Promise.all([
      this.#episodes.alertsOf(id),
      this.#episodes.dataOf(id),
      this.#ledger.find({ trace: id, order: 'asc', limit: TIMELINE_MAX }),
      this.#findings === null ? null : this.#findings.of(id),
    ]);
    const path = this.#actions === null ? null : await this.#actions.pathOf(id);
    const worst = alerts.reduce<string | null>((w, a) => (w === null || severityRank(a.severity) > severityRank(w) ? a.severity : w), null);
    const storm = (await this.#stormCounts([episode])).get(id) ?? null;
    const held = storm === null || this.#storms === null ? null : await this.#storms.top(id, STORM_LISTED);
    return {
      ...summary(episode, this.#clock.now().getTime(), worst, storm === null ? null : { ...storm, held: held ?? [] }),
      signals: alerts.map((a) => ({ ...a, status: a.end_status ?? 'firing' })),
      data,
      investigation:
        findings === null
          ? null
          : { state: findings.state, run: findings.run, started_at: findings.started_at, finished_at: findings.finished_at, note: findings.note },
      verdicts: findings?.verdicts ?? [],
      evidence: findings?.evidence ?? [],
      diagnosis: findings?.diagnosis ?? null,
      proposal: path?.proposal ?? null,
      policy_decision: path?.policy_decision ?? {
        decision: episode.decision,
        outcome: episode.outcome,
        reason: timeline.events.find((e) => e.type === 'episode.decided')?.reason ?? null,
      },
      rehearsal: path?.rehearsal ?? null,
      approvals: path?.approvals ?? [],
      actions: path?.action === null || path?.action === undefined ? [] : [publicAction(path.action)],
      path_state: path?.state ?? null,
      verification: path?.verification ?? null,
      timeline: timeline.events,
      timeline_more: timeline.more,
    };
  }
}

function summary(e: Episode, nowMs: number, severity: string | null, storm: StormView | null): EpisodeSummary {
  const { t_open_ms, t_close_ms, ...rest } = e;
  return { ...rest, severity, storm, duration_s: Math.max(0, Math.round(((t_close_ms ?? nowMs) - t_open_ms) / 1000)) };
}

/** The cursor names the last episode of a page: the next page starts just after it. */
function encodeCursor(e: Episode): string {
  return Buffer.from(JSON.stringify([e.t_open_ms, e.id])).toString('base64url');
}

function decodeCursor(cursor: string | null): { t_open_ms: number; id: string } | null {
  if (cursor === null) return null;
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string' && v[1].length <= 40) {
      return { t_open_ms: v[0] as number, id: v[1] };
    }
  } catch {
    // answered below
  }
  throw new AppError('bad_cursor', 'cursor is not one this service gave out');
}

/** An action as the episode shows it: what `undo` needs stays inside the service. */
function publicAction(a: Record<string, unknown>): Record<string, unknown> {
  const { undo, key: _key, ...rest } = a;
  return { ...rest, reversible: undo !== null && undo !== undefined };
}
