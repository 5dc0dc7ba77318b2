import { AppError } from '../errors.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { Trx } from '../storage/db.ts';
import type { Clock } from '../clock.ts';
import { freezeAt, needsApproval, safeForL2 } from '../policy/policy.service.ts';
import type { ActionRunsRepo } from './action-runs.repo.ts';
import type { ApprovalsService } from './approvals.service.ts';
import type { AutonomyService } from './autonomy.service.ts';
import type { HaltRepo } from './halt.repo.ts';
import type { PolicyReader } from './levels.ts';

const HOUR_MS = 60 * 60 * 1000;

export interface ActionAsk {
  service: string;
  /** The action's kind (e.g. `restart`); must match the approved request's when one is given. */
  kind: string;
  /** The approved `action` request this action runs under. */
  approvalId?: string;
  /** The episode the action is for: a refusal is traced to it, so its timeline and `GET /v1/ledger?trace=` show it. */
  trace?: string;
}

/**
 * The one check every action passes right before it runs, in this order:
 * 1. the halt switch: refused while halted, even an action approved before the halt (`halted`);
 * 2. the policy's change freeze windows (`frozen`);
 * 3. the service's autonomy level: `off` and `shadow` never act (`autonomy_too_low`); at `L1`
 *    every action needs an approved request; at `L2` only kinds the policy lists as safe for L2
 *    run without one; kinds the policy lists as always needing approval always do
 *    (`action_not_approved`);
 * 4. the policy's cap on actions per service per hour, counting those that ran (`action_cap_reached`);
 * 5. a given approval must be an approved `action` request for this service and kind.
 * A refusal is an `action.refused` ledger event and a thrown 409. An action that then runs is
 * counted with {@link ActionGate.ran}.
 *
 * Given the caller's transaction, the switch is read in it (on MySQL under a shared lock, so a
 * halt waits for an action already past the gate to commit, and an action waits for a halt in
 * progress), and the refusal is written after that transaction ends: written inside it, the
 * caller's rollback would take it away, and written alongside it while the caller holds the
 * connection (SQLite) or the chain head (MySQL), it would wait for ever.
 */
export class ActionGate {
  readonly #halt: HaltRepo;
  readonly #approvals: ApprovalsService;
  readonly #ledger: Ledger;
  readonly #log: Logger;
  readonly #autonomy: AutonomyService;
  readonly #policy: PolicyReader;
  readonly #runs: ActionRunsRepo;
  readonly #clock: Clock;
  /** Refusals given inside a caller's transaction, still being written (see {@link ActionGate.idle}). */
  readonly #writing = new Set<Promise<unknown>>();

  constructor(deps: {
    halt: HaltRepo;
    approvals: ApprovalsService;
    autonomy: AutonomyService;
    policy: PolicyReader;
    runs: ActionRunsRepo;
    ledger: Ledger;
    clock: Clock;
    log: Logger;
  }) {
    this.#halt = deps.halt;
    this.#approvals = deps.approvals;
    this.#autonomy = deps.autonomy;
    this.#policy = deps.policy;
    this.#runs = deps.runs;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
    this.#log = deps.log;
  }

  /** Resolves once every refusal given so far is in the ledger (or its failure logged): tests, shutdown. */
  async idle(): Promise<void> {
    while (this.#writing.size > 0) await Promise.all([...this.#writing]);
  }

  /** How many actions ran on `service` since `sinceMs` (the hourly cap's count). */
  ranSince(service: string, sinceMs: number): Promise<number> {
    return this.#runs.since(null, service, sinceMs);
  }

  /** Counts an action that passed the gate and ran (the hourly cap reads these). */
  async ran(trx: Trx | undefined, ask: ActionAsk): Promise<void> {
    await this.#runs.add(trx ?? null, { service: ask.service, kind: ask.kind, at_ms: this.#clock.now().getTime() });
  }

  async authorise(trx: Trx | undefined, ask: ActionAsk): Promise<void> {
    const halt = trx === undefined ? await this.#halt.read() : await this.#halt.readIn(trx, 'share');
    if (halt.halted) {
      await this.#refuse(trx, ask, new AppError('halted', `every action is halted (by ${halt.by ?? 'unknown'}: ${halt.reason ?? ''})`), {
        halted_by: halt.by,
        halt_reason: halt.reason,
      });
    }
    const now = this.#clock.now();
    const policy = await this.#policy.current(trx);
    const frozen = freezeAt(policy, now);
    if (frozen !== null)
      await this.#refuse(trx, ask, new AppError('frozen', `a change freeze is in force (${frozen.name} until ${frozen.end})`), { freeze: frozen.name });
    const level = await this.#autonomy.levelOf(ask.service, trx);
    if (level === 'off' || level === 'shadow') {
      await this.#refuse(trx, ask, new AppError('autonomy_too_low', `${ask.service} is at ${level}: it never acts`), { level });
    }
    const approvalNeeded = level === 'L1' || needsApproval(policy, ask.kind) || !safeForL2(policy, ask.kind);
    if (approvalNeeded && ask.approvalId === undefined) {
      await this.#refuse(trx, ask, new AppError('action_not_approved', `${ask.kind} on ${ask.service} at ${level} needs an approved request`), { level });
    }
    const cap = policy.max_actions_per_service_per_hour;
    const ran = await this.#runs.since(trx ?? null, ask.service, now.getTime() - HOUR_MS);
    if (ran >= cap)
      await this.#refuse(trx, ask, new AppError('action_cap_reached', `${ask.service} has had ${ran} action(s) in the last hour: the policy allows ${cap}`), {
        ran,
        cap,
      });
    if (ask.approvalId !== undefined) {
      const r = await this.#approvals.request(ask.approvalId, trx);
      const problem =
        r === null
          ? 'no such approval request'
          : r.kind !== 'action'
            ? 'the approval is not for an action'
            : r.service !== ask.service
              ? `the approval is for ${r.service}, not ${ask.service}`
              : r.action !== ask.kind
                ? `the approval is for ${r.action ?? 'another action'}, not ${ask.kind}`
                : r.state !== 'approved'
                  ? `the approval request is ${r.state}`
                  : null;
      if (problem !== null) await this.#refuse(trx, ask, new AppError('action_not_approved', problem), {});
    }
  }

  async #refuse(trx: Trx | undefined, ask: ActionAsk, err: AppError, extra: Record<string, unknown>): Promise<never> {
    const event = {
      type: 'action.refused',
      actor: 'system',
      reason: err.message,
      trace: ask.trace ?? null,
      data: { service: ask.service, kind: ask.kind, approval_id: ask.approvalId ?? null, refused: err.code, ...extra },
    };
    const written = this.#ledger.append(event).catch((e: unknown) => this.#log.error({ err: e, action: ask }, 'could not record a refused action'));
    if (trx === undefined) await written;
    else {
      this.#writing.add(written);
      void written.finally(() => this.#writing.delete(written));
    }
    throw err;
  }
}
