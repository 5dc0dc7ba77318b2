import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';
import type { Cause } from '../investigation/catalogue.ts';
import type { CheckInputs, ReaderSource } from '../investigation/context.ts';
import { liveSource, type ConnectorReads, type LedgerFinder } from '../investigation/live-readers.ts';
import { outsideEpisode } from '../investigation/checks-now.ts';
import type { EstateEntries } from '../investigation/retrieval.ts';
import type { VerdictResult } from '../investigation/run-check.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { Leases } from '../schedule/lease.model.ts';
import { clip } from '../text.ts';
import { atTheAlert, judge, readsOnlyTheAlert } from './judge.ts';
import { pacedReads } from './paced-reads.ts';
import { buildReport, type JudgedPair, type PairVerdict, type StudyReport } from './study-report.ts';
import { isDuplicate, type StudyRepo, type StudyRow, type StudyState } from './study.repo.ts';
import { holderName } from '../passes.ts';

/** The study's time limit, in minutes (spec: Limits). */
export const MIN_MINUTES = 5;
export const MAX_MINUTES = 120;
export const DEFAULT_MINUTES = 15;
/** The pause between two causes. */
export const PAUSE_MS = 1000;
/** How long the study waits before looking again whether the investigation it stands aside for is done. */
export const STAND_ASIDE_MS = 5000;
/** The lease the running study is held under; renewed between causes and while waiting. */
export const LEASE = 'study';
export const LEASE_TTL_MS = 60_000;
export const RESTARTED = 'the host restarted';

/** The study as `GET /v1/study` answers it. */
export interface StudyView {
  id: string | null;
  state: 'idle' | StudyState;
  started_at: string | null;
  by: string | null;
  minutes: number | null;
  progress: { done: number; total: number };
  finished_at: string | null;
  cut_short: boolean | null;
  /** Why the study failed, else null. */
  reason: string | null;
  /** The last finished study's report, or null. */
  report: StudyReport | null;
}

export interface StudyDeps {
  repo: StudyRepo;
  leases: Leases;
  causes: () => readonly Cause[];
  /** The estate's added services, earliest first, and each one's entry. */
  estate: EstateEntries & { addedInOrder(): Promise<string[]> };
  connectors: ConnectorReads;
  /** The ledger as the study writes to it and as checks read it. */
  ledger: Ledger & LedgerFinder;
  /** The investigation's checks (ONE cause at a time), and the investigations running now on any host. */
  checkAll(causes: readonly Cause[], inputs: CheckInputs, source: ReaderSource): Promise<VerdictResult[]>;
  investigationsRunning(): Promise<number>;
  clock: Clock;
  log: Logger;
  /** Every wait of the study goes through it (tests advance their clock here instead of sleeping). */
  wait?: (ms: number) => Promise<void>;
}

type Next = 'go' | 'stop' | 'time' | 'lost';

const realWait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/**
 * The study: every added service × every cause of the loaded packs, one cause at a time, read-
 * only, paced, standing aside while an investigation runs, within its time limit. Answers "could
 * the install prove this cause today?" and "what holds now with no alert". See docs/study.md.
 */
export class StudyService {
  readonly #d: StudyDeps;
  readonly #holder = holderName('study');
  readonly #wait: (ms: number) => Promise<void>;

  /** This process's name on the study's lease (GET /metrics counts the leases this host holds). */
  get holder(): string {
    return this.#holder;
  }
  #current: Promise<void> | null = null;
  #starting: Promise<unknown> = Promise.resolve();
  #abort = new AbortController();

  constructor(deps: StudyDeps) {
    this.#d = deps;
    this.#wait = deps.wait ?? realWait;
  }

  /**
   * Starts a study (202); 409 `study_running` while one runs here or on another host. Starts in
   * this process go one after the other: they share the lease's holder, so a refused one must
   * not give back the lease the accepted one just took.
   */
  start(who: Principal, minutes: number): Promise<StudyView> {
    const next = this.#starting.then(() => this.#start(who, minutes));
    this.#starting = next.catch(() => undefined);
    return next;
  }

  async #start(who: Principal, minutes: number): Promise<StudyView> {
    if (this.#current !== null) throw running();
    await this.reap();
    const now = this.#d.clock.now();
    if (!(await this.#d.leases.take(LEASE, this.#holder, LEASE_TTL_MS, now.getTime()))) throw running();
    const services = await this.#d.estate.addedInOrder();
    const causes = [...this.#d.causes()];
    const row = {
      id: randomUUID(),
      state: 'running' as const,
      started_at: now.toISOString(),
      started_ms: now.getTime(),
      by: who.actor,
      minutes,
      total: services.length * causes.length,
      holder: this.#holder,
    };
    try {
      await this.#d.ledger.transact(async (trx, record) => {
        await this.#d.repo.insert(trx, row).catch((e: unknown) => {
          throw isDuplicate(e) ? running() : e;
        });
        await record({
          type: 'study.started',
          actor: who.actor,
          reason: `study started: ${row.total} (service, cause) pair${row.total === 1 ? '' : 's'}, at most ${minutes} minutes`,
          data: { study: row.id, minutes, total: row.total },
        });
      });
    } catch (e) {
      await this.#d.leases.release(LEASE, this.#holder);
      throw e;
    }
    this.#d.log.info({ study: row.id, total: row.total, minutes }, 'study started');
    this.#abort = new AbortController();
    const run = this.#run(row.id, services, causes).catch((err: unknown) => this.#d.log.error({ err, study: row.id }, 'study could not record its end'));
    const tracked: Promise<void> = run.finally(() => {
      if (this.#current === tracked) this.#current = null;
    });
    this.#current = tracked;
    return this.view();
  }

  /** Asks the running study to stop before its next cause; 409 `study_not_running` when none runs. */
  async stop(who: Principal): Promise<StudyView> {
    await this.#d.ledger.transact(async (trx, record) => {
      const active = await this.#d.repo.active(trx);
      if (active === null || !(await this.#d.repo.requestStop(trx, active.id))) throw new AppError('study_not_running', 'no study is running');
      await record({ type: 'study.stop_requested', actor: who.actor, reason: 'stop asked: the study stops before its next cause', data: { study: active.id } });
    });
    return this.view();
  }

  /** The latest study (idle when there has been none) and the last finished report. */
  async view(): Promise<StudyView> {
    const [latest, finished] = await Promise.all([this.#d.repo.latest(), this.#d.repo.lastFinished()]);
    return {
      id: latest?.id ?? null,
      state: latest?.state ?? 'idle',
      started_at: latest?.started_at ?? null,
      by: latest?.by ?? null,
      minutes: latest?.minutes ?? null,
      progress: { done: latest?.done ?? 0, total: latest?.total ?? 0 },
      finished_at: latest?.finished_at ?? null,
      cut_short: latest === null || latest.state === 'running' || latest.state === 'stopping' ? null : latest.cut_short,
      reason: latest?.reason ?? null,
      report: finished?.report ?? null,
    };
  }

  /** A page of the verdicts of the running study, else of the last finished one. */
  async verdicts(
    limit: number,
    offset: number,
  ): Promise<{ study: string | null; state: StudyState | null; verdicts: PairVerdict[]; total: number; limit: number; offset: number }> {
    const study = (await this.#d.repo.active()) ?? (await this.#d.repo.lastFinished());
    if (study === null) return { study: null, state: null, verdicts: [], total: 0, limit, offset };
    const page = await this.#d.repo.verdicts(study.id, limit, offset);
    return { study: study.id, state: study.state, ...page, limit, offset };
  }

  /** The running study left by a host that stopped (its lease ran out) is failed: "the host restarted". */
  async reap(): Promise<void> {
    const active = await this.#d.repo.active();
    if (active === null) return;
    const lease = await this.#d.leases.get(LEASE);
    const held = lease !== null && lease.holder === active.holder && lease.until_ms > this.#d.clock.now().getTime();
    if (held) return;
    if (active.holder === this.#holder && this.#current !== null) return;
    await this.#fail(active.id, RESTARTED);
  }

  /** Resolves when no study of this process is running (tests await it). */
  async idle(): Promise<void> {
    while (this.#current !== null) await this.#current;
  }

  /** The host is stopping: a study it runs ends at once as failed, "the host restarted". */
  async close(): Promise<void> {
    const current = this.#current;
    if (current === null) return;
    this.#abort.abort();
    try {
      const active = await this.#d.repo.active();
      if (active !== null && active.holder === this.#holder) await this.#fail(active.id, RESTARTED);
    } catch (err) {
      // Another host's tick fails it once the lease has run out.
      this.#d.log.error({ err }, 'could not record the study as failed on close');
    }
    await current;
  }

  // ---- internals

  async #run(id: string, services: string[], causes: Cause[]): Promise<void> {
    const connectors = pacedReads(this.#d.connectors, { clock: this.#d.clock, wait: (ms) => this.#pause(ms) });
    let position = 0;
    let cutShort = false;
    try {
      outer: for (const name of services) {
        const view = await this.#d.estate.find(name);
        for (const cause of causes) {
          const next = await this.#before(id, position > 0);
          if (next === 'lost') return;
          if (next !== 'go') {
            cutShort = true;
            break outer;
          }
          let pair: JudgedPair;
          if (readsOnlyTheAlert(cause)) pair = atTheAlert(name, cause);
          else {
            const inputs = outsideEpisode(name, view, this.#d.clock.now().toISOString());
            const source = await liveSource({ connectors, ledger: this.#d.ledger }, inputs.service, inputs.at, cause.reads);
            const [result] = await this.#d.checkAll([cause], inputs, source);
            pair = judge(inputs.service, cause, result!);
          }
          if (this.#abort.signal.aborted) return;
          const kept = await this.#d.ledger.transact(async (trx) => this.#d.repo.record(trx, id, this.#holder, position, pair));
          if (!kept) return;
          position++;
        }
      }
      await this.#finish(id, services, cutShort);
    } catch (err) {
      if (this.#abort.signal.aborted) return;
      this.#d.log.error({ err, study: id }, 'study failed');
      await this.#fail(id, clip(err instanceof Error ? err.message : String(err), 1000, '…'));
    } finally {
      await this.#d.leases.release(LEASE, this.#holder).catch(() => undefined);
    }
  }

  /** Before each cause: the pause, the stop asked, the time limit, standing aside; the lease renewed throughout. */
  async #before(id: string, pause: boolean): Promise<Next> {
    if (pause) await this.#pause(PAUSE_MS);
    let asideLogged = false;
    for (;;) {
      if (this.#abort.signal.aborted) return 'lost';
      const row = await this.#d.repo.get(id);
      if (row === null || row.holder !== this.#holder || (row.state !== 'running' && row.state !== 'stopping')) return 'lost';
      if (row.state === 'stopping') return 'stop';
      if (this.#d.clock.now().getTime() >= row.started_ms + row.minutes * 60_000) return 'time';
      if (!(await this.#renew())) return 'lost';
      if ((await this.#d.investigationsRunning()) === 0) return 'go';
      if (!asideLogged) this.#d.log.info({ study: id }, 'the study stands aside while an investigation runs');
      asideLogged = true;
      await this.#pause(STAND_ASIDE_MS);
    }
  }

  /** A wait that ends early when the host stops, renewing the lease after it. */
  async #pause(ms: number): Promise<void> {
    if (this.#abort.signal.aborted) return;
    const aborted = new Promise<void>((resolve) => this.#abort.signal.addEventListener('abort', () => resolve(), { once: true }));
    await Promise.race([this.#wait(ms), aborted]);
    if (!this.#abort.signal.aborted) await this.#renew();
  }

  #renew(): Promise<boolean> {
    return this.#d.leases.take(LEASE, this.#holder, LEASE_TTL_MS, this.#d.clock.now().getTime());
  }

  async #finish(id: string, services: string[], cutShort: boolean): Promise<void> {
    const pairs = await this.#d.repo.pairs(id);
    const facts = await Promise.all(
      services.map(async (service) => {
        const v = await this.#d.estate.find(service);
        return { service, tier: v?.tier ?? null, owner: v?.owner ?? null };
      }),
    );
    const report = buildReport(pairs, facts, this.#d.clock.now().toISOString(), cutShort);
    await this.#d.ledger.transact(async (trx, record) => {
      const row = await this.#d.repo.get(id, trx);
      if (row === null || row.holder !== this.#holder || !(await this.#d.repo.finish(trx, id, report))) return;
      await record({
        type: 'study.finished',
        actor: 'system',
        reason: `study finished${cutShort ? ' (cut short)' : ''}: ${report.pairs.can_prove} of ${report.pairs.total} pairs can be proven today, ${report.holding_now.length} holding now with no alert`,
        data: { study: id, provable_share: report.provable_share, pairs: report.pairs, cut_short: cutShort, holding_now: report.holding_now.length },
      });
    });
    this.#d.log.info({ study: id, provable_share: report.provable_share, cut_short: cutShort }, 'study finished');
  }

  async #fail(id: string, reason: string): Promise<void> {
    await this.#d.ledger.transact(async (trx, record) => {
      if (!(await this.#d.repo.fail(trx, id, reason, this.#d.clock.now().toISOString()))) return;
      await record({ type: 'study.failed', actor: 'system', reason, data: { study: id } });
    });
  }
}

const running = () => new AppError('study_running', 'a study is running: stop it (POST /v1/study/stop) or wait for it to finish');

export type { StudyRow };
