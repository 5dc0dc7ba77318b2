import type { Db, Trx } from '../storage/db.ts';
import type { JobState, StepState, JobRow, StepRow, CandidateRow } from './discovery.model.ts';

/** The key a queued or running job holds: the unique index lets only one job hold it. */
export const RUNNING_KEY = 'discovery';

const num = (v: unknown): number => Number(v);

function jobFromRaw(r: Record<string, unknown>): JobRow {
  return {
    id: String(r.id),
    state: r.state as JobState,
    started_at: String(r.started_at),
    started_ms: num(r.started_ms),
    finished_at: (r.finished_at as string | null) ?? null,
    touched_ms: num(r.touched_ms),
    by: String(r.by),
    connections: num(r.connections),
    found: num(r.found),
    new_candidates: num(r.new_candidates),
    failed: num(r.failed),
    problem: (r.problem as string | null) ?? null,
  };
}

function stepFromRaw(r: Record<string, unknown>): StepRow {
  return {
    job_id: String(r.job_id),
    connector: String(r.connector),
    kind: String(r.kind),
    state: r.state as StepState,
    found: num(r.found),
    dropped: num(r.dropped),
    problem: (r.problem as string | null) ?? null,
    cut_off: r.cut_off === true || r.cut_off === 1,
    took_ms: r.took_ms === null || r.took_ms === undefined ? null : num(r.took_ms),
    started_at: (r.started_at as string | null) ?? null,
    finished_at: (r.finished_at as string | null) ?? null,
    names: typeof r.names === 'string' ? (JSON.parse(r.names) as string[]) : [],
  };
}

function candidateFromRaw(r: Record<string, unknown>): CandidateRow {
  return {
    name: String(r.name),
    source: String(r.source),
    kind: String(r.kind),
    evidence: JSON.parse(String(r.evidence)) as Array<Record<string, unknown>>,
    first_found_at: String(r.first_found_at),
    last_found_at: String(r.last_found_at),
    first_job_id: String(r.first_job_id),
    last_job_id: String(r.last_job_id),
  };
}

/** Whether an error is a unique-key violation (SQLite or MySQL/MariaDB). */
export function isDuplicate(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === 'ER_DUP_ENTRY' || (typeof code === 'string' && code.startsWith('SQLITE_CONSTRAINT'));
}

const CHUNK = 200;

/** The only code that touches `discovery_jobs`, `discovery_steps` and `service_candidates`. */
export class JobsRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Inserts a job holding the running key, with its steps queued; throws a duplicate error when another job holds the key. */
  async insert(trx: Trx, job: JobRow, steps: Array<{ connector: string; kind: string }>): Promise<void> {
    await trx('discovery_jobs').insert({ ...job, running_key: RUNNING_KEY });
    for (let i = 0; i < steps.length; i += CHUNK) {
      await trx('discovery_steps').insert(
        steps.slice(i, i + CHUNK).map((s) => ({
          job_id: job.id,
          connector: s.connector,
          kind: s.kind,
          state: 'queued',
          found: 0,
          dropped: 0,
          problem: null,
          cut_off: false,
          took_ms: null,
          started_at: null,
          finished_at: null,
          names: null,
        })),
      );
    }
  }

  /** The job holding the running key, if any. */
  async running(trx?: Trx): Promise<JobRow | null> {
    const r = (await (trx ?? this.#db)('discovery_jobs').select('*').where({ running_key: RUNNING_KEY }).first()) as Record<string, unknown> | undefined;
    return r === undefined ? null : jobFromRaw(r);
  }

  async job(id: string, trx?: Trx): Promise<JobRow | null> {
    const r = (await (trx ?? this.#db)('discovery_jobs').select('*').where({ id }).first()) as Record<string, unknown> | undefined;
    return r === undefined ? null : jobFromRaw(r);
  }

  async steps(jobId: string, trx?: Trx): Promise<StepRow[]> {
    const rows = (await (trx ?? this.#db)('discovery_steps').select('*').where({ job_id: jobId }).orderBy('connector')) as Array<Record<string, unknown>>;
    return rows.map(stepFromRaw);
  }

  async touch(jobId: string, ms: number): Promise<void> {
    await this.#db('discovery_jobs').where({ id: jobId }).update({ touched_ms: ms });
  }

  async startStep(jobId: string, connector: string, at: string, ms: number): Promise<void> {
    await this.#db.transaction(async (trx) => {
      await trx('discovery_steps').where({ job_id: jobId, connector }).update({ state: 'running', started_at: at });
      await trx('discovery_jobs').where({ id: jobId }).update({ touched_ms: ms });
    });
  }

  async finishStep(
    trx: Trx,
    step: Pick<StepRow, 'job_id' | 'connector' | 'state' | 'found' | 'dropped' | 'problem' | 'cut_off' | 'took_ms' | 'finished_at' | 'names'>,
    ms: number,
  ): Promise<void> {
    const { job_id, connector, names, ...rest } = step;
    await trx('discovery_steps')
      .where({ job_id, connector })
      .update({ ...rest, names: JSON.stringify(names) });
    await trx('discovery_jobs').where({ id: job_id }).update({ touched_ms: ms });
  }

  /** Ends a job (finished or failed) and releases the running key. */
  async finish(trx: Trx, id: string, end: Pick<JobRow, 'state' | 'finished_at' | 'found' | 'new_candidates' | 'failed' | 'problem'>): Promise<void> {
    await trx('discovery_jobs')
      .where({ id })
      .update({ ...end, running_key: null });
  }

  /** Steps of a job still queued or running, marked failed with `problem` (the job was abandoned). */
  async failOpenSteps(trx: Trx, jobId: string, problem: string, at: string): Promise<void> {
    await trx('discovery_steps').where({ job_id: jobId }).whereIn('state', ['queued', 'running']).update({ state: 'failed', problem, finished_at: at });
  }

  /**
   * Records what one connector found in one job: new names inserted, known ones updated with the
   * latest evidence. Answers how many names were new for this connector.
   */
  async putCandidates(
    trx: Trx,
    c: { source: string; kind: string; jobId: string; at: string; found: Map<string, Array<Record<string, unknown>>> },
  ): Promise<number> {
    const names = [...c.found.keys()];
    const known = new Set<string>();
    for (let i = 0; i < names.length; i += CHUNK) {
      const rows = (await trx('service_candidates')
        .select('name')
        .where({ source: c.source })
        .whereIn('name', names.slice(i, i + CHUNK))) as Array<{ name: string }>;
      for (const r of rows) known.add(r.name.toLowerCase());
    }
    // Compared without case: a MySQL database with a case-insensitive collation sees them as one.
    const fresh = names.filter((n) => !known.has(n.toLowerCase()));
    for (let i = 0; i < fresh.length; i += CHUNK) {
      await trx('service_candidates').insert(
        fresh.slice(i, i + CHUNK).map((name) => ({
          name,
          source: c.source,
          kind: c.kind,
          evidence: JSON.stringify(c.found.get(name)),
          first_found_at: c.at,
          last_found_at: c.at,
          first_job_id: c.jobId,
          last_job_id: c.jobId,
        })),
      );
    }
    for (const name of names) {
      if (!known.has(name.toLowerCase())) continue;
      await trx('service_candidates')
        .where({ name, source: c.source })
        .update({ kind: c.kind, evidence: JSON.stringify(c.found.get(name)), last_found_at: c.at, last_job_id: c.jobId });
    }
    return fresh.length;
  }

  /** The candidates a connector found among `names`. */
  async candidates(source: string, names: string[], trx?: Trx): Promise<CandidateRow[]> {
    const out: CandidateRow[] = [];
    for (let i = 0; i < names.length; i += CHUNK) {
      const rows = (await (trx ?? this.#db)('service_candidates')
        .select('*')
        .where({ source })
        .whereIn('name', names.slice(i, i + CHUNK))) as Array<Record<string, unknown>>;
      out.push(...rows.map(candidateFromRaw));
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Every candidate any job found, by name then connector (the estate's build reads them). */
  async allCandidates(): Promise<CandidateRow[]> {
    const rows = (await this.#db('service_candidates').select('*').orderBy(['name', 'source'])) as Array<Record<string, unknown>>;
    return rows.map(candidateFromRaw);
  }
}
