import type { AlertContext } from '../plugins/contract.ts';
import { dialect, type Db, type Trx } from '../storage/db.ts';
import { applyQuery, lookupTerms, termRows } from './query/compile.ts';
import type { LeafNode, QueryNode } from './query/parse.ts';
import {
  severityRank,
  worstOf,
  type Baseline,
  type Episode,
  type EpisodeAlert,
  type EpisodeMember,
  type OpenedEpisode,
  type OutcomeDetail,
} from './episode.model.ts';

export interface ListFilter {
  limit: number;
  incidentsOnly: boolean;
  query: QueryNode | null;
  after: { t_open_ms: number; id: string } | null;
  nowMs: number;
}

/** Label values longer than these are not searchable as `data.<key>` (they stay on the alert). */
const DATA_KEY_MAX = 100;
const DATA_VALUE_MAX = 200;
const CHUNK = 200;
/** An `alert:`/`data.` term matching fewer rows than this is looked up by its index first. */
const SELECTIVE = 2000;

type Row = Omit<Episode, 'alerts' | 't_open_ms' | 't_close_ms' | 'outcome_detail'> & {
  alert_names: string;
  t_open_ms: number | string;
  t_close_ms: number | string | null;
  outcome_detail: string | null;
};
const fromRow = (r: Row): Episode => ({
  id: r.id,
  kind: r.kind,
  state: r.state,
  service: r.service,
  alerts: JSON.parse(r.alert_names) as string[],
  t_open: r.t_open,
  t_open_ms: Number(r.t_open_ms),
  t_close: r.t_close,
  t_close_ms: r.t_close_ms === null ? null : Number(r.t_close_ms),
  decision: r.decision,
  outcome: r.outcome,
  result: r.result,
  note: r.note,
  outcome_detail: r.outcome_detail === null || r.outcome_detail === undefined ? null : (JSON.parse(r.outcome_detail) as OutcomeDetail),
});
const COLUMNS = [
  'id',
  'kind',
  'state',
  'service',
  'alert_names',
  't_open',
  't_open_ms',
  't_close',
  't_close_ms',
  'decision',
  'outcome',
  'result',
  'note',
  'outcome_detail',
];

/** The only code that touches `episodes`, `episode_alerts` and `episode_data`. */
export class EpisodeRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** The open episode of a service, locked on MySQL for the rest of `trx`. */
  async openFor(trx: Trx, service: string): Promise<Episode | null> {
    const q = trx('episodes').select(COLUMNS).where({ open_service: service });
    const row = (await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }

  /** The services that have an open episode now. */
  async openServices(): Promise<string[]> {
    return ((await this.#db('episodes').select('open_service').whereNotNull('open_service')) as { open_service: string }[]).map((r) => r.open_service);
  }

  /**
   * `opened.source`: the source word of the alert that opened it; `opened.unknown`: opened for a
   * service the estate does not have (the per-source limit counts these).
   */
  async insert(trx: Trx, e: Episode, opened: { source: string | null; unknown: boolean } = { source: null, unknown: false }): Promise<void> {
    await trx('episodes').insert({
      ...this.#columns(e),
      source: opened.source,
      unknown_service: opened.unknown,
      id: e.id,
      service: e.service,
      service_lc: e.service.toLowerCase(),
      open_service: e.state === 'open' ? e.service : null,
      t_open: e.t_open,
      t_open_ms: e.t_open_ms,
      t_close: e.t_close,
      t_close_ms: e.t_close_ms,
      decision: e.decision,
      outcome: e.outcome,
      result: e.result,
      note: e.note,
      note_lc: e.note === null ? null : e.note.toLowerCase(),
      outcome_detail: e.outcome_detail === null ? null : JSON.stringify(e.outcome_detail),
    });
  }

  /** Episodes opened since `sinceMs` for services the estate does not have, from `source` (storms aside). */
  async unknownOpenedSince(trx: Trx, source: string, sinceMs: number): Promise<number> {
    const row = (await trx('episodes')
      .count({ n: '*' })
      .where({ source, unknown_service: true })
      .andWhere('t_open_ms', '>=', sinceMs)
      .whereNot('kind', 'storm')
      .first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  /** Episodes of `service` opened since `sinceMs`. */
  async serviceOpenedSince(trx: Trx, service: string, sinceMs: number): Promise<number> {
    const row = (await trx('episodes').count({ n: '*' }).where({ service }).andWhere('t_open_ms', '>=', sinceMs).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  /** Sets the decision (`act` or `abstain`) the acting path took. */
  async setDecision(trx: Trx, id: string, decision: 'act' | 'abstain'): Promise<void> {
    await trx('episodes').where({ id }).update({ decision });
  }

  /** Sets the outcome and how it came about. */
  async setOutcome(trx: Trx, id: string, outcome: string, detail: OutcomeDetail): Promise<void> {
    await trx('episodes')
      .where({ id })
      .update({ outcome, outcome_detail: JSON.stringify(detail) });
  }

  /** The episode locked on MySQL for the rest of `trx` (outcome changes from several hosts queue). */
  async lock(trx: Trx, id: string): Promise<Episode | null> {
    const q = trx('episodes').select(COLUMNS).where({ id });
    const row = (await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }

  /** The worst severity among an episode's alerts (ended or not); `info` when it has none. */
  async worstSeverity(trx: Trx, id: string): Promise<'critical' | 'warning' | 'info'> {
    const rows = (await trx('episode_alerts').distinct('severity').where({ episode_id: id })) as { severity: string }[];
    return worstOf(rows.map((r) => r.severity));
  }

  /** The alert names and kind after alerts joined. */
  async update(trx: Trx, e: Episode): Promise<void> {
    await trx('episodes').where({ id: e.id }).update(this.#columns(e));
  }

  async close(trx: Trx, id: string, at: Date): Promise<void> {
    await trx('episodes').where({ id }).update({ state: 'closed', open_service: null, t_close: at.toISOString(), t_close_ms: at.getTime() });
  }

  /**
   * Adds alerts to an episode; one that was already in it (it fired again while the episode was
   * still open) becomes current again. Their labels become the episode's `data`.
   */
  async addAlerts(trx: Trx, episodeId: string, alerts: EpisodeMember[]): Promise<void> {
    for (let i = 0; i < alerts.length; i += CHUNK) {
      const rows = alerts.slice(i, i + CHUNK).map((a) => ({
        episode_id: episodeId,
        fingerprint: a.fingerprint,
        name: a.name,
        name_lc: a.name.toLowerCase(),
        severity: a.severity,
        source: a.source,
        summary: a.summary,
        joined_at: a.joined_at,
        ended_at: null,
        end_status: null,
        baseline: JSON.stringify(a.baseline),
        labels: JSON.stringify(a.labels),
        context: a.context === null ? null : JSON.stringify(a.context),
      }));
      await trx('episode_alerts')
        .insert(rows)
        .onConflict(['episode_id', 'fingerprint'])
        .merge(['severity', 'summary', 'ended_at', 'end_status', 'labels', 'context']);
    }
    const data = new Map<string, { episode_id: string; key: string; value: string; value_lc: string }>();
    for (const a of alerts) {
      for (const [key, value] of Object.entries(a.labels)) {
        if (key.length > DATA_KEY_MAX || value.length === 0 || value.length > DATA_VALUE_MAX) continue;
        data.set(`${key}\u0000${value}`, { episode_id: episodeId, key, value, value_lc: value.toLowerCase() });
      }
    }
    const pairs = [...data.values()];
    for (let i = 0; i < pairs.length; i += CHUNK) {
      await trx('episode_data')
        .insert(pairs.slice(i, i + CHUNK))
        .onConflict(['episode_id', 'key', 'value'])
        .ignore();
    }
  }

  /** Marks an alert of an episode as ended, once. */
  async endAlert(trx: Trx, episodeId: string, fingerprint: string, status: 'resolved' | 'released', at: string): Promise<void> {
    await trx('episode_alerts').where({ episode_id: episodeId, fingerprint }).whereNull('ended_at').update({ ended_at: at, end_status: status });
  }

  /** Open episodes none of whose alerts still fire. */
  async closable(trx: Trx | Db = this.#db): Promise<string[]> {
    const rows = (await trx('episodes')
      .select('id')
      .where({ state: 'open' })
      .whereNotExists(trx('episode_alerts').select(trx.raw('1')).whereRaw('episode_alerts.episode_id = episodes.id').whereNull('ended_at'))
      .limit(500)) as { id: string }[];
    return rows.map((r) => r.id);
  }

  /** How each alert of an episode ended. */
  async endings(trx: Trx, episodeId: string): Promise<{ resolved: number; released: number }> {
    const rows = (await trx('episode_alerts').select('end_status').count({ n: '*' }).where({ episode_id: episodeId }).groupBy('end_status')) as {
      end_status: string | null;
      n: number | string;
    }[];
    const count = (s: string): number => Number(rows.find((r) => r.end_status === s)?.n ?? 0);
    return { resolved: count('resolved'), released: count('released') };
  }

  /** Newest first, after the cursor, filtered in SQL; one row more than `limit` tells of more. */
  /** Episodes opened since `sinceMs`, by service and opening time (the estate counts co-firing services). */
  async openedSince(sinceMs: number): Promise<Array<{ service: string; t_open_ms: number }>> {
    const rows = (await this.#db('episodes')
      .select('service', 't_open_ms')
      .where('t_open_ms', '>=', sinceMs)
      .whereNot('kind', 'storm')
      .orderBy('t_open_ms')
      .limit(100_000)) as Array<{
      service: string;
      t_open_ms: number | string;
    }>;
    return rows.map((r) => ({ service: r.service, t_open_ms: Number(r.t_open_ms) }));
  }

  /**
   * Episodes opened in [fromMs, toMs) for the digest: service, outcome and, for a mitigated one,
   * when it was mitigated (its outcome's `at`). Read by the `(t_open_ms, id)` index; at most
   * 100,000 rows (the oldest first).
   */
  async openedBetween(fromMs: number, toMs: number): Promise<OpenedEpisode[]> {
    const rows = (await this.#db('episodes')
      .select('id', 'service', 't_open_ms', 'outcome')
      .select(this.#db.raw("case when outcome = 'mitigated' then outcome_detail else null end as detail"))
      .where('t_open_ms', '>=', fromMs)
      .andWhere('t_open_ms', '<', toMs)
      .orderBy('t_open_ms')
      .limit(100_000)) as Array<{ id: string; service: string; t_open_ms: number | string; outcome: string; detail: string | null }>;
    return rows.map((r) => {
      const at = r.detail === null ? null : Date.parse((JSON.parse(r.detail) as Partial<OutcomeDetail>).at ?? '');
      return { id: r.id, service: r.service, t_open_ms: Number(r.t_open_ms), outcome: r.outcome, mitigated_ms: at === null || Number.isNaN(at) ? null : at };
    });
  }

  /** How many episodes closed in [fromMs, toMs), by service (the `t_close_ms` index). */
  async closedBetween(fromMs: number, toMs: number): Promise<Array<{ service: string; count: number }>> {
    const rows = (await this.#db('episodes')
      .select('service')
      .count({ count: '*' })
      .where('t_close_ms', '>=', fromMs)
      .andWhere('t_close_ms', '<', toMs)
      .groupBy('service')) as Array<{ service: string; count: number | string }>;
    return rows.map((r) => ({ service: r.service, count: Number(r.count) }));
  }

  async list(f: ListFilter): Promise<{ episodes: Episode[]; more: boolean }> {
    const q = this.#db('episodes').select(COLUMNS.map((c) => `episodes.${c}`));
    // A storm is an incident too: it holds what a source sent beyond its limits.
    if (f.incidentsOnly) q.whereIn('episodes.kind', ['incident', 'storm']);
    if (f.after !== null) {
      const { t_open_ms, id } = f.after;
      q.where((w) => w.where('episodes.t_open_ms', '<', t_open_ms).orWhere((o) => o.where('episodes.t_open_ms', t_open_ms).andWhere('episodes.id', '<', id)));
    }
    if (f.query !== null) {
      const selective = await this.#selectiveTerms(f.query);
      q.where((w) => void applyQuery(w, f.query!, f.nowMs, { selective: (leaf) => selective.has(leaf) }));
    }
    const rows = (
      (await q
        .orderBy([
          { column: 'episodes.t_open_ms', order: 'desc' },
          { column: 'episodes.id', order: 'desc' },
        ])
        .limit(f.limit + 1)) as Row[]
    ).map(fromRow);
    const more = rows.length > f.limit;
    if (more) rows.pop();
    return { episodes: rows, more };
  }

  /** The `alert:`/`data.` terms of a query that match fewer than SELECTIVE rows of their table. */
  async #selectiveTerms(query: QueryNode): Promise<Set<LeafNode>> {
    const out = new Set<LeafNode>();
    for (const term of lookupTerms(query).slice(0, 8)) {
      const row = (await termRows(this.#db, term, SELECTIVE).first()) as { n: number | string } | undefined;
      if (Number(row?.n ?? 0) < SELECTIVE) out.add(term);
    }
    return out;
  }

  async get(id: string, trx: Trx | Db = this.#db): Promise<Episode | null> {
    const row = (await trx('episodes').select(COLUMNS).where({ id }).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }

  /** The worst severity among each episode's alerts (critical > warning > info), by episode id. */
  async worstSeverities(ids: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (let i = 0; i < ids.length; i += CHUNK) {
      const rows = (await this.#db('episode_alerts')
        .distinct('episode_id', 'severity')
        .whereIn('episode_id', ids.slice(i, i + CHUNK))) as { episode_id: string; severity: string }[];
      for (const r of rows) {
        const before = out.get(r.episode_id);
        if (before === undefined || severityRank(r.severity) > severityRank(before)) out.set(r.episode_id, r.severity);
      }
    }
    return out;
  }

  /** The alerts of an episode with the labels each had when it joined (empty for alerts of episodes older than labels). */
  async alertsOf(id: string): Promise<EpisodeMember[]> {
    const rows = (await this.#db('episode_alerts')
      .select('fingerprint', 'name', 'severity', 'source', 'summary', 'joined_at', 'ended_at', 'end_status', 'baseline', 'labels', 'context')
      .where({ episode_id: id })
      .orderBy([{ column: 'joined_at' }, { column: 'fingerprint' }])
      .limit(5000)) as (Omit<EpisodeAlert, 'baseline'> & { baseline: string; labels: string | null; context: string | null })[];
    return rows.map((r) => ({
      ...r,
      baseline: JSON.parse(r.baseline) as Baseline,
      labels: r.labels === null ? {} : (JSON.parse(r.labels) as Record<string, string>),
      context: r.context === null ? null : (JSON.parse(r.context) as AlertContext),
    }));
  }

  /**
   * The retrieval step's related episodes: those of `services` (the dependencies) open at `atMs`
   * (the episode's opening) or now, and those of `service` opened since `sinceMs`.
   */
  async related(services: string[], service: string, sinceMs: number, excludeId: string, atMs: number): Promise<{ open: Episode[]; history: Episode[] }> {
    const open =
      services.length === 0
        ? []
        : (
            (await this.#db('episodes')
              .select(COLUMNS)
              .whereIn('service', services.slice(0, 200))
              .andWhere((w) => w.where({ state: 'open' }).orWhere((c) => c.where('t_open_ms', '<=', atMs).andWhere('t_close_ms', '>=', atMs)))
              .orderBy('t_open_ms', 'desc')
              .limit(200)) as Row[]
          ).map(fromRow);
    const history = (
      (await this.#db('episodes')
        .select(COLUMNS)
        .where({ service })
        .andWhere('t_open_ms', '>=', sinceMs)
        .andWhereNot({ id: excludeId })
        .orderBy('t_open_ms', 'desc')
        .limit(50)) as Row[]
    ).map(fromRow);
    return { open, history };
  }

  /** The searchable label values of an episode, by key. */
  async dataOf(id: string): Promise<Record<string, string[]>> {
    const rows = (await this.#db('episode_data').select('key', 'value').where({ episode_id: id }).orderBy(['key', 'value']).limit(5000)) as {
      key: string;
      value: string;
    }[];
    const out: Record<string, string[]> = {};
    for (const r of rows) (out[r.key] ??= []).push(r.value);
    return out;
  }

  #columns(e: Episode): { kind: string; state: string; alert_names: string } {
    return { kind: e.kind, state: e.state, alert_names: JSON.stringify(e.alerts) };
  }
}
