import type { Obstacle } from '../plugins/contract.ts';
import type { Db, Trx } from '../storage/db.ts';
import type { JudgedPair, PairVerdict, StudyReport, StudyVerdict } from './study-report.ts';

export type StudyState = 'running' | 'stopping' | 'finished' | 'failed';

/** One study as stored. */
export interface StudyRow {
  id: string;
  state: StudyState;
  started_at: string;
  started_ms: number;
  by: string;
  minutes: number;
  done: number;
  total: number;
  holder: string;
  finished_at: string | null;
  reason: string | null;
  cut_short: boolean;
  report: StudyReport | null;
}

/** The key a running or stopping study holds: the unique index lets only one study hold it. */
const RUNNING_KEY = 'study';
const ACTIVE: StudyState[] = ['running', 'stopping'];

export function isDuplicate(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === 'ER_DUP_ENTRY' || (typeof code === 'string' && code.startsWith('SQLITE_CONSTRAINT'));
}

function studyFromRaw(r: Record<string, unknown>): StudyRow {
  return {
    id: String(r.id),
    state: r.state as StudyState,
    started_at: String(r.started_at),
    started_ms: Number(r.started_ms),
    by: String(r.by),
    minutes: Number(r.minutes),
    done: Number(r.done),
    total: Number(r.total),
    holder: String(r.holder),
    finished_at: (r.finished_at as string | null) ?? null,
    reason: (r.reason as string | null) ?? null,
    cut_short: r.cut_short === true || Number(r.cut_short) === 1,
    report: typeof r.report === 'string' ? (JSON.parse(r.report) as StudyReport) : null,
  };
}

/** The only code that touches `studies` and `study_verdicts`. */
export class StudyRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Inserts a running study; throws a duplicate-key error when another one holds the running key. */
  async insert(trx: Trx, s: Omit<StudyRow, 'done' | 'finished_at' | 'reason' | 'cut_short' | 'report'>): Promise<void> {
    await trx('studies').insert({ ...s, done: 0, cut_short: false, running_key: RUNNING_KEY });
  }

  async get(id: string, trx?: Trx | null): Promise<StudyRow | null> {
    const r = (await (trx ?? this.#db)('studies').where({ id }).first()) as Record<string, unknown> | undefined;
    return r === undefined ? null : studyFromRaw(r);
  }

  /** The study running or stopping now, on any host, or null. */
  async active(trx?: Trx | null): Promise<StudyRow | null> {
    const r = (await (trx ?? this.#db)('studies').whereIn('state', ACTIVE).orderBy('started_ms', 'desc').first()) as Record<string, unknown> | undefined;
    return r === undefined ? null : studyFromRaw(r);
  }

  /** The most recent study, whatever its state. */
  async latest(): Promise<StudyRow | null> {
    const r = (await this.#db('studies').orderBy('started_ms', 'desc').orderBy('id', 'desc').first()) as Record<string, unknown> | undefined;
    return r === undefined ? null : studyFromRaw(r);
  }

  /** The most recent finished study (the one whose report is shown). */
  async lastFinished(): Promise<StudyRow | null> {
    const r = (await this.#db('studies').where({ state: 'finished' }).orderBy('finished_at', 'desc').orderBy('started_ms', 'desc').first()) as
      Record<string, unknown> | undefined;
    return r === undefined ? null : studyFromRaw(r);
  }

  /** running → stopping; false when the study is not running. */
  async requestStop(trx: Trx, id: string): Promise<boolean> {
    return (await trx('studies').where({ id, state: 'running' }).update({ state: 'stopping' })) === 1;
  }

  /**
   * Records one judged pair and the progress, only while `holder` still runs the study (another
   * host may have failed it after its lease ran out); false when it no longer does.
   */
  async record(trx: Trx, id: string, holder: string, position: number, p: JudgedPair): Promise<boolean> {
    const moved = await trx('studies')
      .where({ id, holder })
      .whereIn('state', ACTIVE)
      .update({ done: position + 1 });
    if (moved !== 1) return false;
    await trx('study_verdicts').insert({
      study_id: id,
      position,
      service: p.service,
      cause: p.cause,
      verdict: p.verdict,
      check: p.check,
      obstacle: p.obstacle,
      reason: p.reason,
      evidence: p.evidence.length === 0 ? null : JSON.stringify(p.evidence),
    });
    return true;
  }

  /** running|stopping → finished with its report; false when it was no longer active. */
  async finish(trx: Trx, id: string, report: StudyReport): Promise<boolean> {
    return (
      (await trx('studies')
        .where({ id })
        .whereIn('state', ACTIVE)
        .update({ state: 'finished', finished_at: report.finished_at, cut_short: report.cut_short, report: JSON.stringify(report), running_key: null })) === 1
    );
  }

  /** running|stopping → failed with the reason; false when it was no longer active. */
  async fail(trx: Trx, id: string, reason: string, at: string): Promise<boolean> {
    return (await trx('studies').where({ id }).whereIn('state', ACTIVE).update({ state: 'failed', finished_at: at, reason, running_key: null })) === 1;
  }

  /** Every judged pair of a study, in order (for its report). */
  async pairs(id: string): Promise<JudgedPair[]> {
    const rows = (await this.#db('study_verdicts').where({ study_id: id }).orderBy('position')) as Array<Record<string, unknown>>;
    return rows.map((r) => ({
      ...verdictOf(r),
      check: (r.check as JudgedPair['check']) ?? null,
      evidence: typeof r.evidence === 'string' ? (JSON.parse(r.evidence) as JudgedPair['evidence']) : [],
    }));
  }

  /** A page of a study's verdicts, in order, and how many there are. */
  async verdicts(id: string, limit: number, offset: number): Promise<{ verdicts: PairVerdict[]; total: number }> {
    const [rows, count] = await Promise.all([
      this.#db('study_verdicts').where({ study_id: id }).orderBy('position').limit(limit).offset(offset) as Promise<Array<Record<string, unknown>>>,
      this.#db('study_verdicts').where({ study_id: id }).count({ n: '*' }).first() as Promise<{ n: number | string } | undefined>,
    ]);
    return { verdicts: rows.map(verdictOf), total: Number(count?.n ?? 0) };
  }
}

function verdictOf(r: Record<string, unknown>): PairVerdict {
  return {
    service: String(r.service),
    cause: String(r.cause),
    verdict: r.verdict as StudyVerdict,
    obstacle: (r.obstacle as Obstacle | null) ?? null,
    reason: String(r.reason),
  };
}
