import { createHash, randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { InvestigatedEpisodes } from '../episodes/episodes.area.ts';
import type { Episode } from '../episodes/episode.model.ts';
import type { Level } from '../governance/levels.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { Trx } from '../storage/db.ts';
import type { AlertSeverity } from '../plugins/contract.ts';
import { worstOf } from '../episodes/episode.model.ts';
import { clip } from '../text.ts';
import { applies } from './applies.ts';
import type { Cause, CauseCatalogue } from './catalogue.ts';
import { checkContext, type CheckInputs, type ReaderSource } from './context.ts';
import { diagnose, rank } from './diagnosis.ts';
import type { Claimed, FindingsRepo } from './findings.repo.ts';
import type { Diagnosis, StoredEvidence } from './findings.model.ts';
import { liveSource, serviceEvents, type ConnectorReads } from './live-readers.ts';
import { retrievalData, retrieve, type EstateEntries } from './retrieval.ts';
import { CheckGate } from './check-gate.ts';
import { runCheck, unknownVerdict, type VerdictResult } from './run-check.ts';
import { Passes, holderName, WORK_LEASE_MS, whileRenewing } from '../passes.ts';

/** The bounds of the issue: 4 checks at a time, 20 s each, 2 minutes per investigation. */
export interface InvestigationLimits {
  concurrency: number;
  checkTimeoutMs: number;
  investigationTimeoutMs: number;
}
export const DEFAULT_LIMITS: InvestigationLimits = { concurrency: 4, checkTimeoutMs: 20_000, investigationTimeoutMs: 120_000 };

/** How long a claimed investigation is held unless renewed (its holder renews it while it works). */
const LEASE_MS = WORK_LEASE_MS;
/** Investigations taken per pass, and run side by side. */
const BATCH = 8;
const PARALLEL = 4;
const NUDGE_MS = 50;

/** Tells the people of an incident its diagnosis (the notify area's outbox, in the same transaction). */
export interface DiagnosisTeller {
  tellDiagnosis(trx: Trx, episode: Episode, severity: AlertSeverity, diagnosis: Diagnosis): Promise<void>;
  nudge(): void;
}

export interface InvestigationDeps {
  findings: FindingsRepo;
  episodes: InvestigatedEpisodes;
  estate: EstateEntries;
  levels: { levelOf(service: string): Promise<Level> };
  catalogue: CauseCatalogue;
  connectors: ConnectorReads;
  ledger: Ledger;
  teller: DiagnosisTeller;
  clock: Clock;
  log: Logger;
  limits?: Partial<InvestigationLimits>;
  /** How many checks run at once on this host (tests give one with their own utilisation); else one of its own. */
  gate?: CheckGate;
  /** Acting's store (below this area): a diagnosis asks for the episode's action path in its own transaction. */
  actions?: { request(trx: Trx, record: RecordEvent, episodeId: string, run: number, service: string, nowMs: number): Promise<void>; nudge(): void };
}

/** One verdict with the ids of the evidence it cites. */
type Recorded = VerdictResult & { evidence_ids: string[] };

/**
 * Steps 2-4 of the path for each episode: retrieve, check, diagnose. Investigations are asked for
 * in the episode's own transaction (findings.repo.ts) and taken here under a lease, so a restarted
 * host resumes them and two hosts never run one twice; every step is a ledger event traced to the
 * episode. Halt does not stop it: diagnosis continues. Autonomy `off` skips it.
 */
export class InvestigationService {
  readonly #d: InvestigationDeps;
  readonly #limits: InvestigationLimits;
  readonly #holder = holderName('investigation');
  readonly #passes: Passes;
  readonly #gate: CheckGate;

  constructor(deps: InvestigationDeps) {
    this.#d = deps;
    this.#gate = deps.gate ?? new CheckGate();
    this.#limits = { ...DEFAULT_LIMITS, ...deps.limits };
    this.#passes = new Passes(
      () => this.#pass(),
      (err: unknown) => deps.log.error({ err }, 'investigating episodes failed'),
      NUDGE_MS,
    );
  }

  /** Asks for a pass soon; nudges in a row make one pass. */
  nudge(): void {
    this.#passes.nudge();
  }

  /** Runs every pending investigation; passes never overlap. Tests await it. */
  run(): Promise<void> {
    return this.#passes.run();
  }

  stop(): Promise<void> {
    return this.#passes.stop();
  }

  /**
   * Gives back what this process claimed and has not concluded (shutdown), or with `everyHolder`
   * what any process claimed (the start of the only host on SQLite): another pass takes it at once.
   */
  release(everyHolder = false): Promise<number> {
    return this.#d.findings.release(everyHolder ? null : this.#holder);
  }

  /** Investigations running now (the live view). */
  running(limit = 100): ReturnType<FindingsRepo['running']> {
    return this.#d.findings.running(limit);
  }

  async #pass(): Promise<void> {
    for (;;) {
      const claimed = await this.#d.findings.claim(this.#holder, this.#d.clock.now().getTime(), LEASE_MS, BATCH);
      if (claimed.length === 0) return;
      let next = 0;
      // The batch's leases, renewed while any of it is still to conclude.
      const open = new Set(claimed.map((c) => c.episode_id));
      const worker = async () => {
        while (next < claimed.length && !this.#passes.stopped) {
          const c = claimed[next++]!;
          await this.#investigate(c).catch((err: unknown) => this.#d.log.error({ err, episode: c.episode_id }, 'an investigation failed'));
          open.delete(c.episode_id);
        }
      };
      await whileRenewing(
        () => Promise.all(Array.from({ length: Math.min(PARALLEL, claimed.length) }, worker)),
        () => this.#d.findings.renew(this.#holder, [...open], this.#d.clock.now().getTime() + LEASE_MS),
        (err: unknown) => this.#d.log.warn({ err }, 'could not renew the leases of running investigations'),
      );
      if (this.#passes.stopped) return;
    }
  }

  async #investigate(c: Claimed): Promise<void> {
    const { ledger, clock, findings } = this.#d;
    const episode = await this.#d.episodes.get(c.episode_id);
    const now = clock.now();
    if (episode === null || (await this.#d.levels.levelOf(c.service)) === 'off') {
      const note = episode === null ? 'the episode no longer exists' : `autonomy of ${c.service} is off: no investigation`;
      await ledger.transact(async (trx, record) => {
        if (!(await findings.stillHeld(trx, c, this.#holder))) return;
        await findings.skip(trx, c, note, now.toISOString());
        if (episode !== null)
          await record({ type: 'decision.not_investigated', actor: 'system', reason: note, trace: c.episode_id, data: { service: c.service, run: c.run } });
      });
      return;
    }
    const { inputs } = await retrieve({ episodes: this.#d.episodes, estate: this.#d.estate }, episode, now.getTime());
    const causes = this.#d.catalogue.causes.filter((cause) => applies(cause.applies, inputs.signals, inputs.service));
    const source = await liveSource(
      { connectors: this.#d.connectors, ledger },
      inputs.service,
      inputs.at,
      causes.flatMap((cause) => cause.reads),
    );
    const hourBefore = new Date(Date.parse(inputs.at) - 3600_000).toISOString();
    const changes = (await serviceEvents(ledger, c.service, 'human.', hourBefore, 100)).filter((e) => e.type === 'human.deploy' || e.type === 'human.action');
    await ledger.append({
      type: 'retrieval.context',
      actor: 'system',
      reason: `gathered what is known of ${c.service}: ${inputs.service.in_estate ? 'its estate entry' : 'no estate entry'}, ${inputs.signals.length} signal(s), ${inputs.related.dependencies.length} open episode(s) of its dependencies`,
      trace: c.episode_id,
      data: {
        ...retrievalData(inputs, c.run),
        // Deploy and action events are recorded by callers (POST /v1/events): evidence with that provenance.
        recent_changes: {
          deploys_and_actions_last_hour: changes.length,
          caller_recorded: changes.filter((e) => e.recorded_by != null).length,
          latest: changes[0]?.at ?? null,
          latest_recorded_by: changes[0]?.recorded_by ?? null,
        },
      },
    });
    // One check.started per run, naming every cause it checks; each cause ends with its own
    // check.finished, or the whole run with one check.replaced (docs/investigation.md).
    if (causes.length > 0)
      await ledger.append({
        type: 'check.started',
        actor: 'system',
        reason: clip(`checking ${causes.length} cause(s): ${causes.map((cause) => cause.title).join(', ')}`, 1000, '…'),
        trace: c.episode_id,
        data: { run: c.run, causes: causes.map((cause) => cause.id) },
      });
    const verdicts = await this.checkAll(causes, inputs, source);
    await this.#conclude(c, episode, verdicts, worstOf(inputs.signals.map((s) => s.severity)), { at: inputs.at, moment: inputs.moment });
  }

  /**
   * Runs causes on inputs, at most `concurrency` at a time, each cut off at its timeout, all
   * within the investigation's time; a cause whose capability cannot be read is `unknown`
   * without running, one not started in time is `unknown` too. Never throws.
   */
  async checkAll(causes: readonly Cause[], inputs: CheckInputs, source: ReaderSource): Promise<VerdictResult[]> {
    const { concurrency, checkTimeoutMs, investigationTimeoutMs } = this.#limits;
    const endsAt = Date.now() + investigationTimeoutMs;
    const results = new Map<string, VerdictResult>();
    const log = this.#d.log.child({ component: 'checks', service: inputs.service.name });
    let next = 0;
    const worker = async () => {
      while (next < causes.length) {
        const cause = causes[next++]!;
        const blocked = cause.reads.map((r) => source.obstacle(r)).find((o) => o !== null);
        if (blocked !== undefined && blocked !== null) {
          results.set(cause.id, unknownVerdict(cause, blocked.obstacle, blocked.problem));
          continue;
        }
        // A place among the host's running checks first (check-gate.ts): the time waited for it counts against the investigation, not the check.
        const leave = await this.#gate.enter();
        try {
          const left = endsAt - Date.now();
          if (left <= 0) {
            results.set(
              cause.id,
              unknownVerdict(
                cause,
                'the read was refused or failed',
                `the investigation ran out of its ${investigationTimeoutMs / 1000} s before this check ran`,
              ),
            );
            continue;
          }
          const pluginLog = pluginLogger(log, cause.id);
          results.set(
            cause.id,
            await runCheck(cause, (signal, deadline) => checkContext(cause, inputs, source, pluginLog, signal, deadline), {
              timeoutMs: Math.min(checkTimeoutMs, left),
              secrets: source.secrets(),
              at: inputs.at,
              moment: inputs.moment,
            }),
          );
        } finally {
          leave();
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, causes.length) }, worker));
    return causes.map((c) => results.get(c.id)!);
  }

  /** Step 4: the verdicts, their evidence and the diagnosis recorded together, then people told. */
  async #conclude(c: Claimed, episode: Episode, verdicts: VerdictResult[], severity: AlertSeverity, read: { at: string; moment: string }): Promise<void> {
    const ranked = rank(verdicts);
    const diagnosis = diagnose(ranked, c.service, read);
    const evidence: StoredEvidence[] = [];
    const recorded: Recorded[] = ranked.map((v) => {
      const ids = v.evidence.map((e) => {
        const id = randomUUID();
        evidence.push({ ...e, id, cause: v.cause });
        return id;
      });
      return { ...v, evidence_ids: ids };
    });
    const byId = new Map(evidence.map((e) => [e.id, e]));
    const told = await this.#d.ledger.transact(
      async (trx, record) => {
        if (!(await this.#d.findings.stillHeld(trx, c, this.#holder))) return false;
        if (recorded.length > 0)
          await record(
            recorded.map((v) => ({
              type: 'check.finished',
              actor: 'system',
              reason: clip(`${v.title}: ${v.verdict}${v.obstacle === null ? '' : ` (${v.obstacle})`}: ${v.reason}`, 1000, '…'),
              trace: c.episode_id,
              data: {
                cause: v.cause,
                run: c.run,
                verdict: v.verdict,
                obstacle: v.obstacle,
                took_ms: v.took_ms,
                evidence: v.evidence_ids.map((id) => digest(byId.get(id)!)),
              },
            })),
          );
        await this.#d.findings.complete(trx, c, { verdicts: recorded, evidence, diagnosis, at: this.#d.clock.now().toISOString() });
        await record({
          type: 'decision.diagnosed',
          actor: 'system',
          reason: diagnosis.summary,
          trace: c.episode_id,
          data: {
            service: c.service,
            run: c.run,
            holds: diagnosis.holds,
            unknown: diagnosis.unknown,
            checked: recorded.length,
            at: read.at,
            moment: read.moment,
          },
        });
        if (episode.kind === 'incident' && recorded.length > 0) await this.#d.teller.tellDiagnosis(trx, episode, severity, diagnosis);
        await this.#d.actions?.request(trx, record, c.episode_id, c.run, c.service, this.#d.clock.now().getTime());
        return true;
      },
      { headFirst: true },
    );
    if (told) {
      this.#d.teller.nudge();
      this.#d.actions?.nudge();
    } else if (recorded.length > 0) await this.#closeReplaced(c, recorded.length);
  }

  /**
   * A run that was no longer held when it finished (a newer run was asked for as alerts joined,
   * or another host took it over) is closed with one event, so its `check.started` is not left
   * without an end; its verdicts are not kept.
   */
  async #closeReplaced(c: Claimed, causes: number): Promise<void> {
    const current = await this.#d.findings.currentRun(c.episode_id);
    const by = current > c.run ? `run ${current}, asked for as new alerts joined` : 'another host, which took the run over';
    await this.#d.ledger.append({
      type: 'check.replaced',
      actor: 'system',
      reason: `run ${c.run} of ${causes} check(s) was replaced by ${by}: its verdicts are not kept`,
      trace: c.episode_id,
      data: { service: c.service, run: c.run, causes, by_run: current > c.run ? current : null },
    });
  }

  /**
   * Re-runs one cause for an episode now, as its investigation would (the acting path's
   * verification). Null when the episode or the cause is gone. Records nothing: the caller does.
   */
  async verify(episodeId: string, causeId: string): Promise<VerdictResult | null> {
    const episode = await this.#d.episodes.get(episodeId);
    const cause = this.#d.catalogue.get(causeId);
    if (episode === null || cause === null) return null;
    const now = this.#d.clock.now();
    const { inputs } = await retrieve({ episodes: this.#d.episodes, estate: this.#d.estate }, episode, now.getTime());
    const at = now.toISOString();
    const current = { ...inputs, at };
    const source = await liveSource({ connectors: this.#d.connectors, ledger: this.#d.ledger }, current.service, at, cause.reads);
    const [verdict] = await this.checkAll([cause], current, source);
    return verdict ?? null;
  }
}

/** What the ledger keeps of an evidence item: where it came from and a hash of what it said. */
function digest(e: StoredEvidence): Record<string, unknown> {
  return {
    id: e.id,
    source: e.source,
    kind: e.kind,
    query: clip(e.query, 500, '…'),
    at: e.at,
    sha256: createHash('sha256')
      .update(JSON.stringify(e.observed ?? null))
      .digest('hex'),
  };
}

function pluginLogger(
  log: Logger,
  cause: string,
): {
  info(m: string, f?: Record<string, unknown>): void;
  warn(m: string, f?: Record<string, unknown>): void;
  error(m: string, f?: Record<string, unknown>): void;
} {
  const l = log.child({ cause });
  const safe = (f: Record<string, unknown> | undefined) => ({ fields: f === undefined ? undefined : clip(JSON.stringify(f) ?? '', 2000, '…') });
  return {
    info: (m, f) => l.info(safe(f), clip(String(m), 500, '…')),
    warn: (m, f) => l.warn(safe(f), clip(String(m), 500, '…')),
    error: (m, f) => l.error(safe(f), clip(String(m), 500, '…')),
  };
}
