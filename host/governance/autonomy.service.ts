import type { StudyReport, StudyReports } from '../study/study-store.ts';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { Trx } from '../storage/db.ts';
import type { ApprovalRequest } from './approvals.model.ts';
import type { ApprovalsService } from './approvals.service.ts';
import type { Asker } from './asker.ts';
import type { AutonomyFileStatus } from './autonomy-file.service.ts';
import { AUTONOMY_FILE } from './autonomy.file.ts';
import type { AutonomyRepo, StoredLevel } from './autonomy.repo.ts';
import type { HaltService } from './halt.service.ts';
import type { RaiseMail } from './raise-mail.ts';
import { haltView } from './halt.service.ts';
import { API_LEVELS, isLevel, rank, type ConnectorCoverage, type KnownServices, type Level, type PolicyReader, type ServiceFacts } from './levels.ts';

export interface PendingRaise {
  id: string;
  level: Level;
  requested_by: string;
  at: string;
}

/** Where a service's level comes from: autonomy.json, the API (a person or an approved raise), or the policy's default. */
export type LevelOrigin = 'file' | 'api' | 'default';

export interface ServiceAutonomy {
  service: string;
  level: Level;
  source: LevelOrigin;
  /** What the service still lacks before a raise is sensible; empty when nothing is known lacking. */
  readiness: string[];
  pending: PendingRaise | null;
}

export interface AutonomyOverview {
  halted: boolean;
  halt: { by: string; reason: string; at: string } | null;
  services: ServiceAutonomy[];
  /** autonomy.json as this host process last read it, and the file in force (docs/governance.md). */
  file: AutonomyFileStatus;
}

/** What the autonomy service reads of autonomy.json (the file service). */
export interface AutonomyFileReader {
  status(): Promise<AutonomyFileStatus>;
}

export interface ChangeOutcome {
  service: string;
  /** The level in force after the call. */
  level: Level;
  /** true when the level changed now. */
  changed: boolean;
  /** The raise waiting for approval (made by this call or found open). */
  pending: PendingRaise | null;
}

/** What the latest study says of the service, as sentences (none when every cause can be proven and nothing holds). */
export function studyReadiness(service: string, report: StudyReport | null): string[] {
  const tile = report?.services.find((s) => s.service === service);
  if (report === null || tile === undefined) return [`${service} has never been studied: run a study to learn which of its causes can be proven today.`];
  const out: string[] = [];
  if (tile.provable_share < 1)
    out.push(
      `The last study could prove ${Math.round(tile.provable_share * 100)} % of ${service}'s causes today: see the study's obstacles for what would make the rest provable.`,
    );
  const holding = report.holding_now.filter((h) => h.service === service).map((h) => h.cause);
  if (holding.length > 0)
    out.push(
      `${holding.length === 1 ? 'A cause holds' : `${holding.length} causes hold`} on ${service} with no alert firing (${holding.slice(0, 5).join(', ')}): see the study's report.`,
    );
  return out;
}

const fileManaged = (service: string) =>
  new AppError('autonomy_file_managed', `${service}'s level is set by ${AUTONOMY_FILE} in SERVICE_CONFIG_DIR: change the file, not the API`);

const pendingOf = (r: ApprovalRequest | null | undefined): PendingRaise | null =>
  r === null || r === undefined ? null : { id: r.id, level: r.to_level!, requested_by: r.requested_by, at: r.requested_at };

/**
 * Each service's autonomy level. Lowering (or setting the same level) takes effect at once; a
 * raise to L1 opens an approval request and the level changes in the transaction of the second
 * approval. A raise above the policy's ceiling for the service is refused. Decisions are not
 * stopped by the halt switch: a raise while halted is still recorded. A service whose level
 * autonomy.json sets is neither raised nor lowered here (409 `autonomy_file_managed`).
 */
export class AutonomyService {
  readonly #repo: AutonomyRepo;
  readonly #approvals: ApprovalsService;
  readonly #halt: HaltService;
  readonly #policy: PolicyReader;
  readonly #coverage: ConnectorCoverage;
  readonly #known: KnownServices;
  readonly #facts: ServiceFacts | null;
  readonly #studies: StudyReports | null;
  readonly #file: AutonomyFileReader;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #raiseMail: Pick<RaiseMail, 'tell'> | null;

  constructor(deps: {
    repo: AutonomyRepo;
    approvals: ApprovalsService;
    halt: HaltService;
    policy: PolicyReader;
    coverage: ConnectorCoverage;
    known: KnownServices;
    facts?: ServiceFacts;
    studies?: StudyReports;
    file: AutonomyFileReader;
    ledger: Ledger;
    clock: Clock;
    /** Tells the owners and admins that a new raise waits for them; absent: nobody is e-mailed. */
    raiseMail?: Pick<RaiseMail, 'tell'>;
  }) {
    this.#repo = deps.repo;
    this.#approvals = deps.approvals;
    this.#halt = deps.halt;
    this.#policy = deps.policy;
    this.#coverage = deps.coverage;
    this.#known = deps.known;
    this.#facts = deps.facts ?? null;
    this.#studies = deps.studies ?? null;
    this.#file = deps.file;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
    this.#raiseMail = deps.raiseMail ?? null;
    this.#approvals.onApproved('autonomy_raise', (trx, record, request, decider) => this.#applyRaise(trx, record, request, decider));
  }

  /** The level in force for a service: its own, else the policy's default. */
  async levelOf(service: string, trx?: Trx): Promise<Level> {
    const stored = trx === undefined ? await this.#repo.get(service) : await this.#repo.lock(trx, service);
    return stored?.level ?? (await this.#policy.current(trx)).default_autonomy;
  }

  async overview(): Promise<AutonomyOverview> {
    const [halt, policy, stored, known, open, file] = await Promise.all([
      this.#halt.state(),
      this.#policy.current(),
      this.#repo.all(),
      this.#known.knownServices(),
      this.#approvals.openRaises(),
      this.#file.status(),
    ]);
    const levels = new Map<string, StoredLevel>(stored.map((s) => [s.service, s]));
    const pending = new Map(open.map((r) => [r.service, r]));
    const names = [...new Set([...known, ...levels.keys(), ...pending.keys()])].sort();
    const services: ServiceAutonomy[] = [];
    for (const service of names) {
      services.push({
        service,
        level: levels.get(service)?.level ?? policy.default_autonomy,
        source: levels.get(service)?.source ?? 'default',
        readiness: await this.readiness(service),
        pending: pendingOf(pending.get(service)),
      });
    }
    return { halted: halt.halted, halt: haltView(halt), services, file };
  }

  /**
   * Sentences a person can act on. The latest study's report says whether the service was
   * studied, what share of its causes can be proven today and what holds now with no alert; the
   * estate says whether it has an owner (without the estate, none has); connectors, through the
   * estate's links, say whether one covers the service.
   */
  async readiness(service: string): Promise<string[]> {
    const lacks: string[] = [];
    if (!(await this.#coverage.covers(service)))
      lacks.push(`No connector can read ${service}'s signals yet: add a connector that covers it, so the service can check causes before it acts.`);
    lacks.push(...studyReadiness(service, (await this.#studies?.latest()) ?? null));
    if (this.#facts === null || (await this.#facts.ownerOf(service)) === null)
      lacks.push(`${service} has no owner: name one in the estate, so someone answers for what the service does there.`);
    return lacks;
  }

  async set(service: string, levelIn: string, asker: Asker): Promise<ChangeOutcome> {
    if (!(API_LEVELS as readonly string[]).includes(levelIn)) {
      throw new AppError('level_not_allowed', levelIn === 'L2' ? 'L2 cannot be set through the API' : `level must be one of ${API_LEVELS.join(', ')}`);
    }
    const level = levelIn as Level;
    const known = await this.#known.knownServices();
    if (!known.includes(service) && (await this.#repo.get(service)) === null) {
      throw new AppError('unknown_service', `no alert has named the service ${service}`);
    }
    const policy = await this.#policy.current();
    let opened: ApprovalRequest | null = null;
    const outcome = await this.#ledger.transact(
      async (trx, record) => {
        const stored = await this.#repo.lock(trx, service);
        if (stored?.source === 'file') throw fileManaged(service);
        const from: Level = stored?.level ?? policy.default_autonomy;
        const open = await this.#approvals.lockOpenRaise(trx, service);
        if (rank(level) === rank(from)) return { service, level: from, changed: false, pending: pendingOf(open) };
        if (rank(level) > rank(from)) {
          const ceiling = policy.ceilings[service];
          if (ceiling !== undefined && isLevel(ceiling) && rank(level) > rank(ceiling)) {
            throw new AppError('level_not_allowed', `the policy's ceiling for ${service} is ${ceiling}`);
          }
          if (level === 'L1') {
            // One open raise per service: a second raise finds the first (the row is locked on
            // MySQL, and the unique open_key stops a second one in any case).
            opened = open === null ? await this.#approvals.openRaise(trx, record, { service, from, to: level, asker }) : null;
            return { service, level: from, changed: false, pending: pendingOf(open ?? opened) };
          }
        }
        await this.#change(trx, record, { service, from, to: level, requestId: null, actor: asker.actor, by: asker.by });
        return { service, level, changed: true, pending: pendingOf(open) };
      },
      { headFirst: true },
    );
    // The raise is committed: the people who may approve it hear of it (a second ask finds it open and tells nobody again).
    if (opened !== null) this.#raiseMail?.tell(opened);
    return outcome;
  }

  async #applyRaise(trx: Trx, record: RecordEvent, r: ApprovalRequest, decider: string): Promise<void> {
    const policy = await this.#policy.current(trx);
    const to = r.to_level!;
    const ceiling = policy.ceilings[r.service];
    if (ceiling !== undefined && isLevel(ceiling) && rank(to) > rank(ceiling)) {
      throw new AppError('level_not_allowed', `the policy's ceiling for ${r.service} is now ${ceiling}: the raise cannot be approved`);
    }
    const stored = await this.#repo.lock(trx, r.service);
    // The file took the service over while the raise waited: the request stays pending and expires.
    if (stored?.source === 'file') throw fileManaged(r.service);
    const from: Level = stored?.level ?? policy.default_autonomy;
    await this.#change(trx, record, { service: r.service, from, to, requestId: r.id, actor: decider, by: r.requested_by });
  }

  async #change(
    trx: Trx,
    record: RecordEvent,
    c: { service: string; from: Level; to: Level; requestId: string | null; actor: string; by: string },
  ): Promise<void> {
    await this.#repo.set(trx, { service: c.service, level: c.to, changed_at: this.#clock.now().toISOString(), changed_by: c.by, source: 'api' });
    await record({
      type: 'governance.autonomy_changed',
      actor: c.actor,
      reason:
        c.requestId === null ? `${c.service} set from ${c.from} to ${c.to} by ${c.by}` : `${c.service} raised from ${c.from} to ${c.to}: request approved`,
      data: { service: c.service, from: c.from, to: c.to, request_id: c.requestId, by: c.by },
    });
  }
}
