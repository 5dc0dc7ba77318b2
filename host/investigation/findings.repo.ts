import { dialect, type Db, type Trx } from '../storage/db.ts';
import type { VerdictResult } from './run-check.ts';
import type { Diagnosis, StoredVerdict, StoredEvidence, InvestigationState, Findings } from './findings.model.ts';

/** An investigation taken by a worker. */
export interface Claimed {
  episode_id: string;
  service: string;
  run: number;
}

interface Row {
  episode_id: string;
  service: string;
  state: InvestigationState;
  run: number;
  diagnosed_run: number | null;
  requested_ms: number | string;
  lease_holder: string | null;
  lease_until_ms: number | string | null;
  started_at: string | null;
  finished_at: string | null;
  diagnosis: string | null;
  note: string | null;
}

/**
 * The investigation's tables (`investigations`, `verdicts`, `evidence`), and the only code that
 * touches them. Built below the episodes area (an opening requests its investigation in its own
 * transaction) and used by the investigation service above it.
 */
export class FindingsRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Asks for an investigation of a new episode (inside its opening transaction). */
  async request(trx: Trx, episodeId: string, service: string, nowMs: number): Promise<void> {
    await trx('investigations')
      .insert({ episode_id: episodeId, service, state: 'pending', run: 1, diagnosed_run: null, requested_ms: nowMs })
      .onConflict('episode_id')
      .ignore();
  }

  /** Asks for a new run (alerts of new names joined); a skipped investigation stays skipped. */
  async rerun(trx: Trx, episodeId: string, nowMs: number): Promise<boolean> {
    const n = await trx('investigations')
      .where({ episode_id: episodeId })
      .whereIn('state', ['pending', 'running', 'diagnosed'])
      .update({ state: 'pending', run: trx.raw('run + 1'), requested_ms: nowMs, lease_holder: null, lease_until_ms: null });
    return Number(n) > 0;
  }

  /**
   * Takes up to `limit` pending investigations (or running ones whose holder's lease ran out: a
   * host stopped mid-run) for `holder`, each with one conditional update, so two host processes
   * never take the same one.
   */
  async claim(holder: string, nowMs: number, leaseMs: number, limit: number): Promise<Claimed[]> {
    const candidates = (await this.#db('investigations')
      .select('episode_id', 'service', 'run', 'state', 'lease_until_ms')
      .where((w) => w.where('state', 'pending').orWhere((r) => r.where('state', 'running').andWhere('lease_until_ms', '<=', nowMs)))
      .orderBy('requested_ms')
      .limit(limit)) as Pick<Row, 'episode_id' | 'service' | 'run' | 'state' | 'lease_until_ms'>[];
    const out: Claimed[] = [];
    for (const c of candidates) {
      const n = await this.#db('investigations')
        .where({ episode_id: c.episode_id, run: c.run, state: c.state })
        .andWhere((w) => (c.state === 'pending' ? w.whereRaw('1 = 1') : w.where('lease_until_ms', '<=', nowMs)))
        .update({ state: 'running', lease_holder: holder, lease_until_ms: nowMs + leaseMs, started_at: new Date(nowMs).toISOString() });
      if (Number(n) === 1) out.push({ episode_id: c.episode_id, service: c.service, run: Number(c.run) });
    }
    return out;
  }

  /** Extends `holder`'s leases on these running investigations to `untilMs` (the holder renews them while it works). */
  async renew(holder: string, episodeIds: readonly string[], untilMs: number): Promise<void> {
    if (episodeIds.length === 0) return;
    await this.#db('investigations').where({ state: 'running', lease_holder: holder }).whereIn('episode_id', episodeIds).update({ lease_until_ms: untilMs });
  }

  /**
   * Gives back the running investigations `holder` claimed (at shutdown), or every holder's (null:
   * at the start of the only host process on SQLite, whose holders are all dead): their lease
   * ends now, so the next pass takes them over as a stopped host's (see `claim`).
   */
  async release(holder: string | null): Promise<number> {
    const q = this.#db('investigations').where({ state: 'running' }).andWhere('lease_until_ms', '>', 0);
    return Number(await (holder === null ? q : q.andWhere({ lease_holder: holder })).update({ lease_until_ms: 0 }));
  }

  /** Whether `holder` still holds the run (no re-run was asked for meanwhile), locking the row. */
  async stillHeld(trx: Trx, c: Claimed, holder: string): Promise<boolean> {
    const q = trx('investigations').select('run', 'state', 'lease_holder').where({ episode_id: c.episode_id });
    const row = (await (dialect(trx) === 'mysql' ? q.forUpdate() : q).first()) as Pick<Row, 'run' | 'state' | 'lease_holder'> | undefined;
    return row !== undefined && Number(row.run) === c.run && row.state === 'running' && row.lease_holder === holder;
  }

  /** The episode's current run number (0 when no investigation was asked for). */
  async currentRun(episodeId: string): Promise<number> {
    const row = (await this.#db('investigations').select('run').where({ episode_id: episodeId }).first()) as Pick<Row, 'run'> | undefined;
    return row === undefined ? 0 : Number(row.run);
  }

  /** Records a finished run: its verdicts ranked, the evidence they cite, the diagnosis. */
  async complete(
    trx: Trx,
    c: Claimed,
    d: { verdicts: Array<VerdictResult & { evidence_ids: string[] }>; evidence: StoredEvidence[]; diagnosis: Diagnosis; at: string },
  ): Promise<void> {
    for (let i = 0; i < d.evidence.length; i += 50) {
      await trx('evidence').insert(
        d.evidence.slice(i, i + 50).map((e) => ({
          id: e.id,
          episode_id: c.episode_id,
          run: c.run,
          cause: e.cause,
          source: e.source,
          kind: e.kind,
          query: e.query,
          at: e.at,
          observed: JSON.stringify(e.observed ?? null),
          excerpt: e.excerpt,
          moment: e.moment,
        })),
      );
    }
    if (d.verdicts.length > 0)
      await trx('verdicts').insert(
        d.verdicts.map((v, rank) => ({
          episode_id: c.episode_id,
          run: c.run,
          cause: v.cause,
          title: v.title,
          verdict: v.verdict,
          reason: v.reason,
          obstacle: v.obstacle,
          evidence_ids: JSON.stringify(v.evidence_ids),
          took_ms: v.took_ms,
          remedy: v.remedy === null ? null : JSON.stringify(v.remedy),
          verification: v.verification === null ? null : JSON.stringify(v.verification),
          specificity: v.specificity,
          strength: v.strength,
          rank,
        })),
      );
    await trx('investigations')
      .where({ episode_id: c.episode_id, run: c.run })
      .update({
        state: 'diagnosed',
        diagnosed_run: c.run,
        finished_at: d.at,
        diagnosis: JSON.stringify(d.diagnosis),
        lease_holder: null,
        lease_until_ms: null,
      });
  }

  /** The investigation will not run (autonomy off); `note` says why. */
  async skip(trx: Trx, c: Claimed, note: string, at: string): Promise<void> {
    await trx('investigations')
      .where({ episode_id: c.episode_id, run: c.run })
      .update({ state: 'skipped', note, finished_at: at, lease_holder: null, lease_until_ms: null });
  }

  /** Running investigations, oldest first (the live view). */
  async running(limit: number): Promise<Array<{ episode_id: string; service: string; run: number; started_at: string | null }>> {
    const rows = (await this.#db('investigations')
      .select('episode_id', 'service', 'run', 'started_at')
      .where({ state: 'running' })
      .orderBy('requested_ms')
      .limit(limit)) as Array<Pick<Row, 'episode_id' | 'service' | 'run' | 'started_at'>>;
    return rows.map((r) => ({ ...r, run: Number(r.run) }));
  }

  /**
   * When each of these episodes was last diagnosed (its latest finished run that reached a
   * diagnosis), in ms; an episode never diagnosed is absent. The digest's time to diagnosis.
   */
  async diagnosedAt(episodeIds: string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (let i = 0; i < episodeIds.length; i += 500) {
      const rows = (await this.#db('investigations')
        .select('episode_id', 'finished_at')
        .whereIn('episode_id', episodeIds.slice(i, i + 500))
        .whereNotNull('diagnosed_run')
        .whereNotNull('finished_at')) as Array<{ episode_id: string; finished_at: string }>;
      for (const r of rows) {
        const ms = Date.parse(r.finished_at);
        if (!Number.isNaN(ms)) out.set(r.episode_id, ms);
      }
    }
    return out;
  }

  /** How many are running now (GET /metrics). */
  async runningCount(): Promise<number> {
    const row = (await this.#db('investigations').count({ n: '*' }).where({ state: 'running' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  /** How many wait to run. */
  async pendingCount(): Promise<number> {
    const row = (await this.#db('investigations').count({ n: '*' }).where({ state: 'pending' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  /** What an episode shows: the last finished run's verdicts and evidence; null when none was asked for. */
  async of(episodeId: string): Promise<Findings | null> {
    const row = (await this.#db('investigations').select('*').where({ episode_id: episodeId }).first()) as Row | undefined;
    if (row === undefined) return null;
    const shown = row.diagnosed_run === null ? null : Number(row.diagnosed_run);
    const [verdicts, evidence] =
      shown === null
        ? [[], []]
        : await Promise.all([
            this.#db('verdicts').select('*').where({ episode_id: episodeId, run: shown }).orderBy('rank') as Promise<Array<Record<string, unknown>>>,
            this.#db('evidence').select('*').where({ episode_id: episodeId, run: shown }).orderBy('id') as Promise<Array<Record<string, unknown>>>,
          ]);
    const order = new Map<string, number>();
    const storedVerdicts: StoredVerdict[] = verdicts.map((v) => {
      const ids = JSON.parse(String(v.evidence_ids)) as string[];
      for (const id of ids) if (!order.has(id)) order.set(id, order.size);
      return {
        cause: String(v.cause),
        title: String(v.title),
        verdict: v.verdict as StoredVerdict['verdict'],
        reason: String(v.reason),
        obstacle: (v.obstacle as string | null) ?? null,
        evidence: ids,
        took_ms: Number(v.took_ms),
        remedy: v.remedy === null ? null : (JSON.parse(String(v.remedy)) as unknown),
        verification: v.verification === null ? null : (JSON.parse(String(v.verification)) as unknown),
      };
    });
    const storedEvidence: StoredEvidence[] = evidence
      .map((e) => ({
        id: String(e.id),
        cause: String(e.cause),
        source: String(e.source),
        kind: String(e.kind),
        query: String(e.query),
        at: String(e.at),
        observed: JSON.parse(String(e.observed)) as unknown,
        excerpt: String(e.excerpt),
        moment: (e.moment ?? 'stated') as StoredEvidence['moment'],
      }))
      .sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
    return {
      state: row.state,
      run: Number(row.run),
      started_at: row.started_at,
      finished_at: row.finished_at,
      note: row.note,
      diagnosis: row.diagnosis === null ? null : (JSON.parse(row.diagnosis) as Diagnosis),
      verdicts: storedVerdicts,
      evidence: storedEvidence,
    };
  }
}
