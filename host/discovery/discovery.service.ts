import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { ConnectorService } from '../connectors/connectors.service.ts';
import { AppError } from '../errors.ts';
import type { UnitOfWork } from '../storage/unit-of-work.ts';
import type { Principal } from '../identity/principal.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import { isDuplicate, type JobsRepo } from './jobs.repo.ts';
import type { CandidateRow, JobRow, StepRow } from './discovery.model.ts';
import { clip } from '../text.ts';

/** How many connections one job asks at the same time. */
const PARALLEL = 4;
/** The most candidates one job's answer lists (the table keeps them all). */
const MAX_LISTED = 2000;
/** The most evidence items kept per name and connector. */
const MAX_EVIDENCE_ITEMS = 20;
/** Beyond the per-connection limit: how long a running job may go without progress before it counts as abandoned. */
const ABANDON_GRACE_MS = 60_000;

/** A job as `POST /v1/discover` and `GET /v1/jobs/{id}` answer it. */
export interface JobView {
  id: string;
  kind: 'discovery';
  state: JobRow['state'];
  started_at: string;
  finished_at: string | null;
  by: string;
  /** The cut-off of each connection, in seconds (SERVICE_DISCOVER_TIMEOUT_S). */
  timeout_s: number;
  /** How many connections the job asks; `steps` is their progress. */
  connections: number;
  found: number;
  new_candidates: number;
  failed: number;
  problem: string | null;
  steps: Array<Omit<StepRow, 'job_id' | 'names'>>;
  /** What the job found, per connector: candidates, never services, until a person adds them. */
  candidates: Array<Omit<CandidateRow, 'first_job_id' | 'last_job_id'> & { new: boolean }>;
  candidates_truncated: boolean;
}

export interface DiscoveryDeps {
  repo: JobsRepo;
  work: UnitOfWork;
  connectors: ConnectorService;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  /** SERVICE_DISCOVER_TIMEOUT_S. */
  timeoutS: number;
}

/**
 * Discovery jobs: asks every configured connector whose kind can `discover` what services it
 * knows of, each cut off at `timeoutS`, in the background, one job at a time; keeps what they
 * find as candidates (`service_candidates`), never as services.
 */
export class DiscoveryService {
  readonly #repo: JobsRepo;
  readonly #connectors: ConnectorService;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly timeoutS: number;
  readonly #work: UnitOfWork;
  #current: Promise<void> | null = null;

  constructor(deps: DiscoveryDeps) {
    this.#repo = deps.repo;
    this.#connectors = deps.connectors;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
    this.#log = deps.log.child({ component: 'discovery' });
    this.timeoutS = deps.timeoutS;
    this.#work = deps.work;
  }

  /**
   * Starts a job and answers it at once (its steps queued); the work goes on in the background.
   * 409 `discovery_running` (with the running job's id in the message and a Location header)
   * while another job runs, here or on another host sharing the database.
   */
  async start(who: Principal): Promise<JobView> {
    if (this.#current !== null) await this.#refuseRunning();
    await this.#releaseAbandoned();
    const targets = await this.#connectors.discoverable();
    const now = this.#clock.now();
    const job: JobRow = {
      id: randomUUID(),
      state: 'running',
      started_at: now.toISOString(),
      started_ms: now.getTime(),
      finished_at: null,
      touched_ms: now.getTime(),
      by: who.actor,
      connections: targets.length,
      found: 0,
      new_candidates: 0,
      failed: 0,
      problem: null,
    };
    try {
      await this.#ledger.transact(async (trx, record) => {
        await this.#repo
          .insert(
            trx,
            job,
            targets.map((t) => ({ connector: t.name, kind: t.kind })),
          )
          .catch((e: unknown) => {
            // Another job took the running key first (a race here, or another host).
            throw isDuplicate(e) ? new AppError('discovery_running') : e;
          });
        await record({
          type: 'discovery.started',
          actor: who.actor,
          reason: `discovery started over ${targets.length} connection${targets.length === 1 ? '' : 's'}`,
          data: { job: job.id, connections: targets.map((t) => t.name), timeout_s: this.timeoutS },
        });
      });
    } catch (e) {
      if (e instanceof AppError && e.code === 'discovery_running') await this.#refuseRunning();
      throw e;
    }
    this.#log.info({ job: job.id, connections: targets.length }, 'discovery started');
    const run = this.#run(job).catch((err: unknown) => this.#log.error({ err, job: job.id }, 'discovery job failed'));
    const tracked: Promise<void> = run.finally(() => {
      if (this.#current === tracked) this.#current = null;
    });
    this.#current = tracked;
    return this.job(job.id);
  }

  /** A job with its steps and candidates; 404 `not_found`. */
  async job(id: string): Promise<JobView> {
    const job = /^[0-9a-f-]{36}$/.test(id) ? await this.#repo.job(id) : null;
    if (job === null) throw new AppError('not_found', 'no such job');
    const steps = await this.#repo.steps(id);
    const candidates: JobView['candidates'] = [];
    let truncated = false;
    for (const s of steps) {
      if (s.names.length === 0) continue;
      if (candidates.length >= MAX_LISTED) {
        truncated = true;
        break;
      }
      for (const c of await this.#repo.candidates(s.connector, s.names)) {
        if (candidates.length >= MAX_LISTED) {
          truncated = true;
          break;
        }
        const { first_job_id, last_job_id: _last, ...rest } = c;
        candidates.push({ ...rest, new: first_job_id === id });
      }
    }
    return {
      id: job.id,
      kind: 'discovery',
      state: job.state,
      started_at: job.started_at,
      finished_at: job.finished_at,
      by: job.by,
      timeout_s: this.timeoutS,
      connections: job.connections,
      found: job.found,
      new_candidates: job.new_candidates,
      failed: job.failed,
      problem: job.problem,
      steps: steps.map(({ job_id: _j, names: _n, ...s }) => s),
      candidates,
      candidates_truncated: truncated,
    };
  }

  /** Resolves when no job of this process is running (tests await it; close may too). */
  /** Every candidate kept from every job (read by the estate's build). */
  async candidates(): Promise<CandidateRow[]> {
    return this.#repo.allCandidates();
  }

  async idle(): Promise<void> {
    while (this.#current !== null) await this.#current;
  }

  // ---- internals

  async #refuseRunning(): Promise<never> {
    const running = await this.#repo.running();
    const id = running?.id ?? 'unknown';
    throw new AppError(
      'discovery_running',
      `discovery job ${id} is running; follow it at /v1/jobs/${id}`,
      running === null ? {} : { location: `/v1/jobs/${id}` },
    );
  }

  /** A job left running by a host that stopped (no progress for longer than a connection may take) is failed, freeing the key. */
  async #releaseAbandoned(): Promise<void> {
    const running = await this.#repo.running();
    if (running === null) return;
    const now = this.#clock.now();
    const idleMs = now.getTime() - running.touched_ms;
    if (idleMs <= this.timeoutS * 1000 + ABANDON_GRACE_MS) await this.#refuseRunning();
    const problem = `abandoned: no progress for ${Math.round(idleMs / 1000)} s (the host running it stopped)`;
    await this.#ledger.transact(async (trx, record) => {
      await this.#repo.failOpenSteps(trx, running.id, problem, now.toISOString());
      await this.#repo.finish(trx, running.id, {
        state: 'failed',
        finished_at: now.toISOString(),
        found: running.found,
        new_candidates: running.new_candidates,
        failed: running.failed,
        problem,
      });
      await record({ type: 'discovery.failed', actor: 'system', reason: `discovery job ${running.id} ${problem}`, data: { job: running.id, problem } });
    });
    this.#log.warn({ job: running.id }, problem);
  }

  async #run(job: JobRow): Promise<void> {
    const steps = await this.#repo.steps(job.id);
    let found = 0;
    let fresh = 0;
    let failed = 0;
    let cutOff = 0;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < steps.length) {
        const step = steps[next++]!;
        const outcome = await this.#step(job.id, step).catch((err: unknown) => {
          this.#log.error({ err, job: job.id, connector: step.connector }, 'discovery step could not be recorded');
          return { found: 0, fresh: 0, ok: false, cut_off: false };
        });
        found += outcome.found;
        fresh += outcome.fresh;
        if (!outcome.ok) failed++;
        if (outcome.cut_off) cutOff++;
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(PARALLEL, steps.length) }, worker));
      const at = this.#clock.now().toISOString();
      await this.#ledger.transact(async (trx, record) => {
        await this.#repo.finish(trx, job.id, { state: 'finished', finished_at: at, found, new_candidates: fresh, failed, problem: null });
        await record({
          type: 'discovery.finished',
          actor: 'system',
          reason: `discovery finished: ${found} name${found === 1 ? '' : 's'} found (${fresh} new) over ${steps.length} connection${steps.length === 1 ? '' : 's'}, ${failed} failed`,
          data: { job: job.id, by: job.by, connections: steps.length, finished: steps.length - failed, failed, cut_off: cutOff, found, new_candidates: fresh },
        });
      });
      this.#log.info({ job: job.id, found, new_candidates: fresh, failed }, 'discovery finished');
    } catch (err) {
      const problem = `the job failed: ${err instanceof Error ? clip(err.message.split('\n', 1)[0]!, 500) : String(err)}`;
      this.#log.error({ err, job: job.id }, 'discovery job failed');
      const at = this.#clock.now().toISOString();
      await this.#ledger.transact(async (trx, record) => {
        await this.#repo.failOpenSteps(trx, job.id, problem, at);
        await this.#repo.finish(trx, job.id, { state: 'failed', finished_at: at, found, new_candidates: fresh, failed, problem });
        await record({
          type: 'discovery.failed',
          actor: 'system',
          reason: `discovery job ${job.id}: ${problem}`,
          data: { job: job.id, problem, found, new_candidates: fresh },
        });
      });
    }
  }

  /** Asks one connection and records its outcome and candidates in one transaction. */
  async #step(jobId: string, step: StepRow): Promise<{ found: number; fresh: number; ok: boolean; cut_off: boolean }> {
    const started = this.#clock.now();
    await this.#repo.startStep(jobId, step.connector, started.toISOString(), started.getTime());
    const r = await this.#connectors.discover(step.connector, this.timeoutS * 1000).catch((e: unknown) => ({
      ok: false,
      problem:
        e instanceof AppError && e.code === 'not_found'
          ? 'the connector was removed while the job ran'
          : clip(`the discovery failed: ${e instanceof Error ? e.message : String(e)}`, 1000),
      cut_off: false,
      services: [],
      dropped: 0,
      took_ms: 0,
    }));
    // One entry per name (the first spelling of names equal but for case), its evidence merged.
    const merged = new Map<string, Array<Record<string, unknown>>>();
    const spelled = new Map<string, string>();
    for (const s of r.services) {
      const key = s.name.toLowerCase();
      const name = spelled.get(key) ?? s.name;
      spelled.set(key, name);
      const items = merged.get(name) ?? [];
      if (items.length < MAX_EVIDENCE_ITEMS) items.push({ source: s.source, ...s.evidence });
      merged.set(name, items);
    }
    const now = this.#clock.now();
    let fresh = 0;
    await this.#work.run(async (trx) => {
      if (merged.size > 0)
        fresh = await this.#repo.putCandidates(trx, { source: step.connector, kind: step.kind, jobId, at: now.toISOString(), found: merged });
      await this.#repo.finishStep(
        trx,
        {
          job_id: jobId,
          connector: step.connector,
          state: r.ok ? 'finished' : 'failed',
          found: merged.size,
          dropped: r.dropped,
          problem: r.problem,
          cut_off: r.cut_off,
          took_ms: r.took_ms,
          finished_at: now.toISOString(),
          names: [...merged.keys()],
        },
        now.getTime(),
      );
    });
    if (!r.ok) this.#log.warn({ job: jobId, connector: step.connector, cut_off: r.cut_off }, `discovery of ${step.connector} failed: ${r.problem}`);
    return { found: merged.size, fresh, ok: r.ok, cut_off: r.cut_off };
  }
}
