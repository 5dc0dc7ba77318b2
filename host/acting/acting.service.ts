import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Episode, EpisodeMember, OutcomeDetail } from '../episodes/episode.model.ts';
import { worstOf } from '../episodes/episode.model.ts';
import type { ServiceView } from '../estate/estate.model.ts';
import type { ActionAskOptions, ApprovalView } from '../governance/approvals.service.ts';
import type { ApprovalRequest } from '../governance/approvals.model.ts';
import type { ActionAsk } from '../governance/action-gate.ts';
import type { Level } from '../governance/levels.ts';
import type { Findings } from '../investigation/findings.model.ts';
import type { VerdictResult } from '../investigation/run-check.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { ActionRequest, ActionResult } from '../plugins/contract.ts';
import type { PolicyDocument } from '../policy/policy.schema.ts';
import type { Trx } from '../storage/db.ts';
import { markdownText } from '../escape.ts';
import { clip } from '../text.ts';
import { type ActionPathsRepo } from './paths.repo.ts';
import { replaceable, type ActionPath } from './paths.model.ts';
import { decide, type PolicyDecision } from './policy-decision.ts';
import { propose, type Performer, type Proposal } from './proposal.ts';
import { scopeOf } from './scope.ts';
import { approvalReport, escalationReport } from './report.ts';
import { Passes, holderName, WORK_LEASE_MS, whileRenewing } from '../passes.ts';

const HOUR_MS = 3600_000;
/** Why a notice's path tells nobody (docs/notifications.md: notices page nobody). */
const NOTICE = 'a notice (information only): nobody is paged';
/** An action request stays open this long, then the path escalates. */
export const ACTION_APPROVAL_TTL_MS = 30 * 60_000;
/** A path's step is held this long unless renewed (its holder renews it while the step runs). */
const LEASE_MS = WORK_LEASE_MS;
const BATCH = 16;
const NUDGE_MS = 50;

/** What acting needs of the episodes area. */
export interface ActedEpisodes {
  get(id: string, trx?: Trx): Promise<Episode | null>;
  worstSeverity(trx: Trx, id: string): Promise<'critical' | 'warning' | 'info'>;
  signalsOf(id: string): Promise<EpisodeMember[]>;
  setDecision(trx: Trx, id: string, decision: 'act' | 'abstain'): Promise<void>;
  setOutcome(trx: Trx, id: string, outcome: string, detail: OutcomeDetail): Promise<void>;
  /** The episode locked on MySQL for the rest of `trx`. */
  lock(trx: Trx, id: string): Promise<Episode | null>;
}

/** What acting needs of governance. */
export interface ActingGovernance {
  levelOf(service: string): Promise<Level>;
  halted(): Promise<boolean>;
  policy(): Promise<Pick<PolicyDocument, 'freeze_windows' | 'always_approve' | 'safe_for_l2' | 'max_actions_per_service_per_hour'>>;
  ranSince(service: string, sinceMs: number): Promise<number>;
  /** The action gate; throws a 409 AppError (and records `action.refused`) when the action may not run. */
  authorise(ask: ActionAsk): Promise<void>;
  ran(ask: ActionAsk): Promise<void>;
  openAction(trx: Trx, record: RecordEvent, ask: { service: string; kind: string; summary: string; by: string } & ActionAskOptions): Promise<ApprovalRequest>;
  /** Closes a pending action request as `superseded` in `trx`; answers it as found (null: none). */
  supersede(trx: Trx, record: RecordEvent, id: string, why: string): Promise<ApprovalRequest | null>;
  approval(id: string): Promise<ApprovalView>;
}

/** The connectors that perform actions (host/connectors/connector-actions.ts). */
export interface ActionConnectors {
  performers(kind: string): Promise<Performer[]>;
  rehearse(name: string, request: ActionRequest): Promise<ActionResult>;
  act(name: string, request: ActionRequest): Promise<ActionResult>;
  undo(name: string, request: ActionRequest & { undo: Record<string, unknown> }): Promise<ActionResult>;
}

/** Tells people: the escalation to the owner and approvers, and to whoever heard of the incident. */
export interface EscalationTeller {
  /** The escalation: to whoever was told of the opening, and by e-mail to `people`. Answers who. */
  escalate(trx: Trx, change: PeopleMessage): Promise<string[]>;
  /** The approval request, by e-mail to the approvers only. */
  askApproval(trx: Trx, change: PeopleMessage): Promise<string[]>;
  /** The request no longer stands (superseded), by e-mail to its approvers only. */
  withdrawApproval(trx: Trx, change: PeopleMessage): Promise<string[]>;
  nudge(): void;
}

/** A message of the action path to people, with its Markdown report and the diagnosis when there is one. */
export interface PeopleMessage {
  episode: Episode;
  severity: 'critical' | 'warning' | 'info';
  report: string;
  diagnosis?: { summary: string; holds: string[]; unknown: string[] };
  /** Who is told by e-mail, and what each is to the service (said in their e-mail). */
  people: Array<{ email: string; as: 'owner' | 'approver' | 'first_owner' }>;
}

export interface ActingDeps {
  paths: ActionPathsRepo;
  findings: { of(episodeId: string): Promise<Findings | null> };
  episodes: ActedEpisodes;
  estate: { find(name: string): Promise<ServiceView | null> };
  people: { firstOwner(): Promise<string | null> };
  governance: ActingGovernance;
  connectors: ActionConnectors;
  /** Re-runs one cause for the episode now (the verification). */
  verifier: { verify(episodeId: string, cause: string): Promise<VerdictResult | null> };
  teller: EscalationTeller;
  /** Which normaliser reads a source word (intake): the kind of tool a pushed alert came from. */
  normaliserOf(source: string): string;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  /** The console's address for links (the single sign-on settings' `console_address`). */
  consoleAddress: { get(trx?: Trx): Promise<string | null> };
}

/**
 * Steps 5 to 10 of the path for each diagnosed episode: propose, decide, rehearse, ask for
 * approval, act through the gate, verify, and end `mitigated` or escalated. The path's state lives
 * in `action_paths`; each step is taken under a lease and saved with its ledger events, so a
 * restarted host resumes it, and an action that may have run when a host stopped is never run
 * again (the path escalates instead). See docs/acting.md.
 */
export class ActingService {
  readonly #d: ActingDeps;
  readonly #holder = holderName('acting');
  readonly #passes: Passes;
  /** A request was withdrawn in a transaction: nudge delivery after it. */
  #withdrew = false;

  constructor(deps: ActingDeps) {
    this.#d = deps;
    this.#passes = new Passes(
      () => this.#pass(),
      (err: unknown) => deps.log.error({ err }, 'acting on episodes failed'),
      NUDGE_MS,
    );
  }

  nudge(): void {
    if (this.#withdrew) {
      this.#withdrew = false;
      this.#d.teller.nudge();
    }
    this.#passes.nudge();
  }

  /** Advances every path whose next step is due; passes never overlap. Tests await it. */
  run(): Promise<void> {
    return this.#passes.run();
  }

  stop(): Promise<void> {
    return this.#passes.stop();
  }

  /**
   * Gives back the paths this process claimed and has not saved (shutdown), or with `everyHolder`
   * those of any process (the start of the only host on SQLite): another pass takes them at once.
   */
  release(everyHolder = false): Promise<number> {
    return this.#d.paths.release(everyHolder ? null : this.#holder);
  }

  /**
   * Reverses the `n`-th (1-based) action of an episode (`POST /v1/episodes/{id}/actions/{n}/undo`)
   * through the action gate (halt, freeze, level, cap, the original approval) and the connector's
   * `undo`; `action.undone` or `action.undo_failed`. 404 when there is no such action, 409
   * `not_reversible` when it cannot be undone or was undone already.
   */
  async undo(episodeId: string, n: number, actor: string): Promise<Record<string, unknown>> {
    const p = await this.#d.paths.get(episodeId);
    const a = p?.action as
      (Record<string, unknown> & { connector: string; kind: string; params: Record<string, unknown>; undo: Record<string, unknown> | null }) | null;
    if (p === null || a === null || a === undefined || n !== 1 || a.ok !== true) throw new AppError('not_found', 'the episode has no such executed action');
    if (a.undo === null || a.undone_at !== null)
      throw new AppError('not_reversible', a.undone_at !== null ? 'the action was undone already' : 'this action cannot be undone');
    const episode = await this.#d.episodes.get(episodeId);
    if (episode === null) throw new AppError('not_found', 'no such episode');
    const ask: ActionAsk = { service: p.service, kind: a.kind, trace: episodeId, ...(typeof a.approval_id === 'string' ? { approvalId: a.approval_id } : {}) };
    await this.#d.governance.authorise(ask);
    const proposal = p.proposal as unknown as Proposal;
    const r = await this.#d.connectors.undo(a.connector, { ...(await this.#request(episode, proposal, p)), undo: a.undo });
    const now = this.#d.clock.now().toISOString();
    const action = { ...a, ...(r.ok ? { undone_at: now, undone_by: actor } : {}) };
    await this.#d.ledger.transact(async (trx, record) => {
      if (r.ok) await this.#d.paths.save(trx, episodeId, { action }, false);
      await record({
        type: r.ok ? 'action.undone' : 'action.undo_failed',
        actor,
        reason: r.ok ? `undid ${a.kind} via ${a.connector}: ${clip(r.shown ?? 'done', 500, '…')}` : `could not undo ${a.kind} via ${a.connector}: ${r.problem}`,
        trace: episodeId,
        data: { service: p.service, action: a.kind, connector: a.connector, ok: r.ok, problem: r.problem },
      });
    });
    if (!r.ok) throw new AppError('action_failed', `the undo failed: ${r.problem ?? 'no reason given'}`);
    const shown: Record<string, unknown> = { ...action, reversible: false };
    delete shown.undo;
    delete shown.key;
    return shown;
  }

  /**
   * Asks for the path of a diagnosed run, in the diagnosis's transaction. One action path per
   * episode at a time: a later run replaces a path that has not acted, and the approval request
   * that path waited on is closed as `superseded` (approving it answers 409) and its approvers are
   * told. A request approved just before stands: its action goes ahead, and this run is
   * diagnosed without a path of its own.
   */
  async request(trx: Trx, record: RecordEvent, episodeId: string, run: number, service: string, nowMs: number): Promise<void> {
    const old = await this.#d.paths.lock(trx, episodeId);
    if (old !== null && old.state === 'awaiting_approval' && old.approval_id !== null && replaceable(old)) {
      const why = `run ${run} of the episode (new alerts joined) decides again`;
      const r = await this.#d.governance.supersede(trx, record, old.approval_id, why);
      if (r !== null && r.state === 'approved') return;
      if (r !== null && r.state === 'pending') await this.#withdrawn(trx, record, old, r, why);
    }
    await this.#d.paths.request(trx, episodeId, run, service, nowMs);
  }

  /** The replaced path's request is superseded: the path's view and timeline say so, its approvers are told. */
  async #withdrawn(trx: Trx, record: RecordEvent, p: ActionPath, r: ApprovalRequest, why: string): Promise<void> {
    const approvers = r.approvers ?? [];
    await record({
      type: 'approval.superseded',
      actor: 'system',
      reason: `the request to ${r.action ?? 'act'} no longer stands: ${why}`,
      trace: p.episode_id,
      data: { service: p.service, request_id: r.id, run: p.run, approvers },
    });
    const episode = await this.#d.episodes.get(p.episode_id, trx);
    if (episode === null || approvers.length === 0) return;
    const severity = await this.#d.episodes.worstSeverity(trx, p.episode_id);
    const report = [
      `Approval no longer needed: ${markdownText(r.summary)}`,
      '',
      `New alerts joined the incident and the service is deciding again (${markdownText(why)}). This request is closed as superseded: approving it now answers 409 and runs nothing.`,
      'If the new decision needs an approval, a new request follows.',
    ].join('\n');
    await this.#d.teller.withdrawApproval(trx, { episode, severity, report, people: approvers.map((email) => ({ email, as: 'approver' as const })) });
    this.#withdrew = true;
  }

  /** The path of an episode, for the episode view. */
  pathOf(episodeId: string): Promise<ActionPath | null> {
    return this.#d.paths.get(episodeId);
  }

  async #pass(): Promise<void> {
    await this.#proposeHeldAgain();
    // Each path takes at most one step per pass (a step may run several stages: approved → act).
    const done: string[] = [];
    for (;;) {
      const claimed = await this.#d.paths.claim(this.#holder, this.#d.clock.now().getTime(), LEASE_MS, BATCH, done);
      if (claimed.length === 0 || this.#passes.stopped) return;
      // The batch's leases, renewed while any of it is still to be advanced.
      const open = new Set(claimed.map((p) => p.episode_id));
      await whileRenewing(
        async () => {
          for (const p of claimed) {
            // Stopping (shutdown): the rest of the batch is given back (ActingService.release).
            if (this.#passes.stopped) return;
            done.push(p.episode_id);
            await this.#advance(p).catch(async (err: unknown) => {
              this.#d.log.error({ err, episode: p.episode_id }, 'an action path step failed');
              await this.#release(p);
            });
            open.delete(p.episode_id);
          }
        },
        () => this.#d.paths.renew(this.#holder, [...open], this.#d.clock.now().getTime() + LEASE_MS),
        (err: unknown) => this.#d.log.warn({ err }, 'could not renew the leases of action paths'),
      );
      if (done.length >= 500) return;
    }
  }

  /**
   * Once the halt is released, every path whose fix the halt held back starts again as a new run
   * (`decision.reproposed`), when its episode is still open: the incident is not left open with
   * nothing proposed. Read on every pass, so whichever host's worker runs first after a resume
   * (or after a restart) does it, once.
   */
  async #proposeHeldAgain(): Promise<void> {
    const held = await this.#d.paths.heldByHalt(BATCH);
    if (held.length === 0 || (await this.#d.governance.halted())) return;
    for (const h of held) {
      const episode = await this.#d.episodes.get(h.episode_id);
      const open = episode !== null && episode.state === 'open';
      await this.#d.ledger.transact(
        async (trx, record) => {
          const changed = await this.#d.paths.reopenHeld(trx, h.episode_id, h.run, this.#d.clock.now().getTime(), open);
          if (!changed || !open) return;
          await record({
            type: 'decision.reproposed',
            actor: 'system',
            reason: 'the halt was released: the fix it held back is proposed again',
            trace: h.episode_id,
            data: { service: episode.service, run: h.run + 1 },
          });
        },
        { headFirst: true },
      );
    }
  }

  async #release(p: ActionPath): Promise<void> {
    await this.#d.ledger.transact(async (trx) => {
      if ((await this.#d.paths.held(trx, p.episode_id, p.run, this.#holder)) !== null) await this.#d.paths.save(trx, p.episode_id, {});
    });
  }

  async #advance(p: ActionPath): Promise<void> {
    switch (p.state) {
      case 'pending':
        return this.#plan(p);
      case 'awaiting_approval':
        return this.#awaitApproval(p);
      case 'executing':
        // A host stopped between marking the action and recording its result: whether it ran is
        // not known, so it is never run again; people are told.
        return this.#escalate(
          p,
          'the host stopped while the action was being taken (action.started has no result): it may have run, so it is not repeated; check the outside system',
        );
      case 'verifying':
        return this.#verify(p);
      default:
        return this.#release(p);
    }
  }

  /** Steps 5-8: proposal, policy decision, rehearsal, and approval or execution. */
  async #plan(p: ActionPath): Promise<void> {
    const { ledger, clock } = this.#d;
    const [episode, findings, service] = await Promise.all([
      this.#d.episodes.get(p.episode_id),
      this.#d.findings.of(p.episode_id),
      this.#d.estate.find(p.service),
    ]);
    if (episode === null || findings === null) return this.#finish(p, null, 'the episode or its findings are gone');
    const performers = new Map<string, Performer[]>();
    for (const v of findings.verdicts) {
      const action = (v.remedy as { action?: unknown } | null)?.action;
      if (typeof action === 'string' && !performers.has(action)) performers.set(action, await this.#d.connectors.performers(action));
    }
    const proposed = propose(findings.verdicts, service, (kind) => performers.get(kind) ?? []);
    const now = clock.now();
    if (!proposed.ok) {
      const level = await this.#d.governance.levelOf(p.service);
      const decision: PolicyDecision = { decision: 'abstain', reason: proposed.why, level, approval: false, checks: [] };
      await ledger.transact(async (trx, record) => {
        if ((await this.#d.paths.held(trx, p.episode_id, p.run, this.#holder)) === null) return;
        await this.#d.paths.save(trx, p.episode_id, { policy_decision: { ...decision }, updated_at: now.toISOString() }, false);
        await this.#d.episodes.setDecision(trx, p.episode_id, 'abstain');
        await record({
          type: 'decision.policy',
          actor: 'system',
          reason: `abstain: ${proposed.why}`,
          trace: p.episode_id,
          data: { service: p.service, decision: 'abstain', level },
        });
      });
      return this.#escalate({ ...p, policy_decision: { ...decision } }, `nothing to do: ${proposed.why}`);
    }
    const [level, halted, policy, ran, signals] = await Promise.all([
      this.#d.governance.levelOf(p.service),
      this.#d.governance.halted(),
      this.#d.governance.policy(),
      this.#d.governance.ranSince(p.service, now.getTime() - HOUR_MS),
      this.#d.episodes.signalsOf(p.episode_id),
    ]);
    const scope = scopeOf(proposed.proposal, {
      service: p.service,
      view: service,
      signals,
      performers: performers.get(proposed.proposal.action) ?? [],
      normaliserOf: this.#d.normaliserOf,
    });
    // Bounded, the proposal is what runs: the silence's matchers and connector narrowed to its alert.
    const proposal = scope.bounded ? scope.proposal : proposed.proposal;
    const decision = decide(proposal, { level, halted, policy, ranLastHour: ran, now, scope });
    const held = await ledger.transact(async (trx, record) => {
      if ((await this.#d.paths.held(trx, p.episode_id, p.run, this.#holder)) === null) return false;
      await this.#d.paths.save(trx, p.episode_id, { proposal: { ...proposal }, policy_decision: { ...decision }, updated_at: now.toISOString() }, false);
      await this.#d.episodes.setDecision(trx, p.episode_id, decision.decision);
      await record([
        {
          type: 'decision.proposed',
          actor: 'system',
          reason: `${proposal.action} via ${proposal.connector}: ${clip(proposal.why, 500, '…')}`,
          trace: p.episode_id,
          data: { service: p.service, ...proposalData(proposal) },
        },
        {
          type: 'decision.policy',
          actor: 'system',
          reason: `${decision.decision}: ${decision.reason}`,
          trace: p.episode_id,
          data: { service: p.service, decision: decision.decision, level, approval: decision.approval, checks: decision.checks },
        },
      ]);
      return true;
    });
    if (!held) return;
    const planned: ActionPath = { ...p, proposal: { ...proposal }, policy_decision: { ...decision } };
    if (decision.decision === 'abstain') return this.#escalate(planned, decision.reason, halted && (level === 'L1' || level === 'L2'));
    if (proposal.rehearsable) {
      const r = await this.#d.connectors.rehearse(proposal.connector, await this.#request(episode, proposal, p));
      // A connector that cannot rehearse with its settings is not a failed rehearsal: the path goes on.
      const rehearsal = r.ok
        ? { ok: true, shown: clip(r.shown ?? '', 2000, '…'), at: clock.now().toISOString() }
        : r.not_rehearsable === true
          ? { ok: null, shown: clip(r.problem ?? 'not rehearsable', 2000, '…'), at: clock.now().toISOString() }
          : { ok: false, problem: r.problem ?? 'it failed' };
      await ledger.transact(async (trx, record) => {
        await this.#d.paths.save(trx, p.episode_id, { rehearsal: rehearsal, updated_at: clock.now().toISOString() }, false);
        await record({
          type: 'action.rehearsed',
          actor: 'system',
          reason: r.ok
            ? `rehearsed ${proposal.action}: ${clip(r.shown ?? 'ok', 500, '…')}`
            : r.not_rehearsable === true
              ? `${proposal.action} via ${proposal.connector} is not rehearsed: ${r.problem}`
              : `the rehearsal of ${proposal.action} failed: ${r.problem}`,
          trace: p.episode_id,
          data: { service: p.service, action: proposal.action, connector: proposal.connector, ...rehearsal },
        });
      });
      planned.rehearsal = rehearsal;
      if (!r.ok && r.not_rehearsable !== true) return this.#escalate(planned, `the rehearsal failed: ${r.problem}`);
    }
    // A notice pages nobody (docs/notifications.md): asking approvers is paging them.
    if (decision.approval && episode.kind === 'notice') return this.#endUntold(planned, `${decision.reason}; approval would be needed`, NOTICE);
    if (decision.approval) return this.#askApproval(planned, episode, proposal, service, findings);
    return this.#execute(planned, episode, proposal, null);
  }

  /** Step 8: an approval request to the service's approvers (else its owner, else the first owner). */
  async #askApproval(p: ActionPath, episode: Episode, proposal: Proposal, service: ServiceView | null, findings: Findings): Promise<void> {
    const as: 'approver' | 'owner' | 'first_owner' =
      service !== null && service.approvers.length > 0 ? 'approver' : service?.owner != null ? 'owner' : 'first_owner';
    const approvers =
      as === 'approver' ? service!.approvers : as === 'owner' ? [service!.owner!] : [await this.#d.people.firstOwner()].filter((x): x is string => x !== null);
    const needed = service?.tier === 1 ? 2 : 1;
    const now = this.#d.clock.now();
    const summary = `${proposal.action} on ${p.service} via ${proposal.connector}: ${proposal.why}`;
    const severity = await this.#severity(p.episode_id);
    await this.#d.ledger.transact(
      async (trx, record) => {
        // A later run took the path over meanwhile: this run asks nobody.
        if ((await this.#d.paths.held(trx, p.episode_id, p.run, this.#holder)) === null) return;
        const r = await this.#d.governance.openAction(trx, record, {
          service: p.service,
          kind: proposal.action,
          summary,
          by: 'system',
          approvers,
          needed,
          ttlMs: ACTION_APPROVAL_TTL_MS,
          trace: p.episode_id,
        });
        const asked = { id: r.id, state: 'pending', approvers, needed, expires_at: new Date(r.expires_ms).toISOString(), decisions: [] };
        await this.#d.paths.save(trx, p.episode_id, {
          state: 'awaiting_approval',
          approval_id: r.id,
          approvals: [asked],
          due_ms: now.getTime(),
          updated_at: now.toISOString(),
        });
        await record({
          type: 'approval.requested',
          actor: 'system',
          reason: `asking ${approvers.join(', ') || 'nobody (no approver, owner or first owner known)'} to approve ${proposal.action} (${needed} approval${needed === 1 ? '' : 's'} within 30 minutes)`,
          trace: p.episode_id,
          data: { service: p.service, request_id: r.id, approvers, needed, expires_at: new Date(r.expires_ms).toISOString() },
        });
        await this.#d.teller.askApproval(trx, {
          episode,
          severity,
          report: approvalReport(summary, proposal, findings, await this.#d.consoleAddress.get(trx), p.episode_id),
          ...diagnosisOf(findings),
          people: approvers.map((email) => ({ email, as })),
        });
      },
      { headFirst: true },
    );
    this.#d.teller.nudge();
  }

  /** Waits for the request's decision; approved runs the action, rejected or expired escalates. */
  async #awaitApproval(p: ActionPath): Promise<void> {
    const view = await this.#d.governance.approval(p.approval_id ?? '');
    const now = this.#d.clock.now().getTime();
    const expired = view.state === 'expired' || (view.state === 'pending' && Date.parse(view.expires_at) <= now);
    const seen = {
      id: view.id,
      state: expired ? 'expired' : view.state,
      approvers: view.approvers,
      needed: view.approvals_needed,
      expires_at: view.expires_at,
      decisions: view.decisions,
    };
    if (view.state === 'pending' && !expired) {
      await this.#d.ledger.transact(async (trx) => {
        if ((await this.#d.paths.held(trx, p.episode_id, p.run, this.#holder)) !== null) await this.#d.paths.save(trx, p.episode_id, { approvals: [seen] });
      });
      return;
    }
    // A request superseded by a later run belongs to a path that run replaced: nothing to do here.
    const held = await this.#d.ledger.transact(async (trx, record) => {
      if ((await this.#d.paths.held(trx, p.episode_id, p.run, this.#holder)) === null) return false;
      await this.#d.paths.save(trx, p.episode_id, { approvals: [seen] }, false);
      await record({
        type: 'approval.decided',
        actor: view.decisions.at(-1)?.by ?? 'system',
        reason: `the request to ${p.proposal?.action ?? 'act'} is ${expired ? 'expired' : view.state}`,
        trace: p.episode_id,
        data: {
          service: p.service,
          request_id: view.id,
          state: expired ? 'expired' : view.state,
          decisions: view.decisions.map((d) => ({ by: d.by, decision: d.decision, at: d.at })),
        },
      });
      return true;
    });
    if (!held) return;
    if (view.state !== 'approved') return this.#escalate(p, expired ? 'nobody approved the action within 30 minutes' : `the action was ${view.state}`);
    const episode = await this.#d.episodes.get(p.episode_id);
    if (episode === null || p.proposal === null) return this.#finish(p, null, 'the episode is gone');
    return this.#execute(p, episode, p.proposal as unknown as Proposal, view.id);
  }

  /** Step 9: the gate right before the call, then the connector's `act`. */
  async #execute(p: ActionPath, episode: Episode, proposal: Proposal, approvalId: string | null): Promise<void> {
    const ask: ActionAsk = { service: p.service, kind: proposal.action, trace: p.episode_id, ...(approvalId === null ? {} : { approvalId }) };
    try {
      await this.#d.governance.authorise(ask);
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      return this.#escalate(p, `the action gate refused it: ${e.message}`, e.code === 'halted');
    }
    const request = await this.#request(episode, proposal, p);
    // Recorded before the call, with the path marked `executing`: a host that dies during the call
    // leaves `action.started` without `action.executed`/`action.failed`, the record that it may have run.
    const marked = await this.#d.ledger.transact(async (trx, record) => {
      if ((await this.#d.paths.held(trx, p.episode_id, p.run, this.#holder)) === null) return false;
      await this.#d.paths.save(
        trx,
        p.episode_id,
        { state: 'executing', action: { connector: proposal.connector, kind: proposal.action, params: proposal.params, key: request.key } },
        false,
      );
      await record({
        type: 'action.started',
        actor: 'system',
        reason: `${proposal.action} via ${proposal.connector}: calling the connector now`,
        trace: p.episode_id,
        data: {
          service: p.service,
          action: proposal.action,
          connector: proposal.connector,
          params: proposal.params,
          approval_id: approvalId,
          key: request.key,
          run: p.run,
        },
      });
      return true;
    });
    if (!marked) return;
    const result = await this.#d.connectors.act(proposal.connector, request);
    const now = this.#d.clock.now();
    const action = {
      connector: proposal.connector,
      kind: proposal.action,
      params: proposal.params,
      key: request.key,
      approval_id: approvalId,
      executed_at: now.toISOString(),
      ok: result.ok,
      shown: clip(result.shown ?? '', 2000, '…'),
      problem: result.problem,
      undo: result.undo ?? null,
      undone_at: null,
    };
    if (result.ok) await this.#d.governance.ran(ask);
    await this.#d.ledger.transact(async (trx, record) => {
      if (result.ok) {
        // Until the verification says, the episode is neither escalated nor mitigated.
        const told = await this.#told(trx, p.episode_id);
        const after = proposal.verify.after_s ?? 120;
        await this.#d.episodes.setOutcome(trx, p.episode_id, 'verifying', {
          value: 'verifying',
          reason: `${proposal.action} via ${proposal.connector} ran; ${proposal.verify.by === 'alerts' ? "the episode's alerts are watched" : `${proposal.verify.cause} is re-checked`} ${after} s after it`,
          at: now.toISOString(),
          ...told,
        });
      }
      await this.#d.paths.save(
        trx,
        p.episode_id,
        {
          state: result.ok ? 'verifying' : 'executing',
          action,
          due_ms: now.getTime() + (proposal.verify.after_s ?? 120) * 1000,
          updated_at: now.toISOString(),
        },
        result.ok,
      );
      await record({
        type: result.ok ? 'action.executed' : 'action.failed',
        actor: 'system',
        reason: result.ok
          ? `${proposal.action} via ${proposal.connector}: ${clip(result.shown ?? 'done', 500, '…')}`
          : `${proposal.action} via ${proposal.connector} failed: ${result.problem}`,
        trace: p.episode_id,
        data: {
          service: p.service,
          action: proposal.action,
          connector: proposal.connector,
          params: proposal.params,
          approval_id: approvalId,
          ok: result.ok,
          problem: result.problem,
        },
      });
    });
    if (!result.ok) return this.#escalate({ ...p, action }, `the action failed: ${result.problem}`);
  }

  /**
   * Step 10: the verification. `mitigated` only when it passed: the re-checked cause answers what
   * was expected (no longer holds), or, for a remedy verified by its alerts, every alert of the
   * episode cleared after the action. Alerts that cleared while the cause still holds (a revert
   * pushed to a branch nobody merged, the error rate still high) are no mitigation.
   */
  async #verify(p: ActionPath): Promise<void> {
    const proposal = p.proposal as unknown as Proposal;
    const byAlerts = proposal.verify.by === 'alerts';
    const [signals, verdict] = await Promise.all([
      this.#d.episodes.signalsOf(p.episode_id),
      byAlerts ? Promise.resolve(null) : this.#d.verifier.verify(p.episode_id, proposal.verify.cause),
    ]);
    const actedAt = Date.parse(String((p.action as { executed_at?: unknown } | null)?.executed_at ?? ''));
    const cleared = signals.length > 0 && signals.every((s) => s.end_status === 'resolved' && s.ended_at !== null && !(Date.parse(s.ended_at) < actedAt));
    const checked = verdict !== null && verdict.verdict === proposal.verify.expect;
    const now = this.#d.clock.now();
    const verification = {
      at: now.toISOString(),
      cause: proposal.verify.cause,
      expected: proposal.verify.expect,
      by: byAlerts ? 'alerts' : 'check',
      verdict: verdict?.verdict ?? null,
      reason: verdict?.reason ?? null,
      alerts_resolved: cleared,
      mitigated: byAlerts ? cleared : checked,
    };
    if (!verification.mitigated) {
      await this.#d.ledger.transact(async (trx) => this.#d.paths.save(trx, p.episode_id, { verification }, false));
      return this.#escalate(
        { ...p, verification },
        byAlerts
          ? `the remedy is not shown to work: no check could re-examine the cause, and the episode's alerts did not all clear after the action`
          : `the remedy did not work: ${proposal.verify.cause} is ${verdict?.verdict ?? 'not known'}${verdict === null ? '' : ` (${clip(verdict.reason, 300, '…')})`}, not ${proposal.verify.expect}`,
      );
    }
    await this.#d.ledger.transact(async (trx, record) => {
      if ((await this.#d.paths.held(trx, p.episode_id, p.run, this.#holder)) === null) return;
      await this.#d.paths.save(trx, p.episode_id, { state: 'done', verification, outcome: 'mitigated', updated_at: now.toISOString() });
      const reason = `mitigated by ${proposal.action} via ${proposal.connector}: ${byAlerts ? 'every alert of the episode cleared after it' : `${proposal.verify.cause} is now ${verdict!.verdict}`}`;
      const told = await this.#told(trx, p.episode_id);
      await this.#d.episodes.setOutcome(trx, p.episode_id, 'mitigated', {
        value: 'mitigated',
        reason,
        at: now.toISOString(),
        told: told.told,
        channels: told.channels,
      });
      await record({ type: 'outcome.mitigated', actor: 'system', reason, trace: p.episode_id, data: { service: p.service, ...verification } });
    });
  }

  /** Who the episode's outcome says was told so far (kept when the outcome moves on). */
  async #told(trx: Trx, episodeId: string): Promise<{ told: string[]; channels: Array<{ to: string; how: string }> }> {
    const e = await this.#d.episodes.lock(trx, episodeId);
    return { told: [...(e?.outcome_detail?.told ?? [])], channels: [...(e?.outcome_detail?.channels ?? [])] };
  }

  /**
   * The path ends without a mitigation: the owner and approvers get the report, the targets
   * `incident.escalated`. Not for a notice (notices page nobody), nor for an incident that closed
   * before anything was done (a stale "escalated" would send people to a fixed incident).
   * `heldByHalt`: the halt held the fix back; it is proposed again once the halt is released.
   */
  async #escalate(p: ActionPath, why: string, heldByHalt = false): Promise<void> {
    const episode = await this.#d.episodes.get(p.episode_id);
    if (episode === null) return this.#finish(p, null, why);
    if (episode.kind === 'notice') return this.#endUntold(p, why, NOTICE);
    if (episode.state === 'closed' && p.action === null) return this.#endUntold(p, why, 'the incident closed before anything was done: nobody is told');
    const [findings, service] = await Promise.all([this.#d.findings.of(p.episode_id), this.#d.estate.find(p.service)]);
    const people: PeopleMessage['people'] = [];
    if (typeof service?.owner === 'string') people.push({ email: service.owner, as: 'owner' });
    for (const a of service?.approvers ?? []) if (!people.some((x) => x.email === a)) people.push({ email: a, as: 'approver' });
    if (people.length === 0) {
      const first = await this.#d.people.firstOwner();
      if (first !== null) people.push({ email: first, as: 'first_owner' });
    }
    const report = escalationReport({ episode, findings, path: p, why, publicUrl: await this.#d.consoleAddress.get() });
    const severity = await this.#severity(p.episode_id);
    await this.#d.ledger.transact(
      async (trx, record) => {
        if ((await this.#d.paths.held(trx, p.episode_id, p.run, this.#holder)) === null) return;
        const to = await this.#d.teller.escalate(trx, { episode, severity, report, ...(findings === null ? {} : diagnosisOf(findings)), people });
        const now = this.#d.clock.now().toISOString();
        // Until somebody is told, the episode says who is about to be, not an older "nobody to tell".
        const current = to.length === 0 ? null : await this.#d.episodes.lock(trx, p.episode_id);
        if (current !== null && current.outcome === '')
          await this.#d.episodes.setOutcome(trx, p.episode_id, '', {
            value: null,
            reason: `telling ${to.join(', ')}: not delivered yet`,
            at: now,
            told: [],
            channels: [],
          });
        await this.#endVerifying(trx, p.episode_id, why, to);
        await this.#d.paths.save(trx, p.episode_id, { state: 'done', outcome: 'escalated', held_by_halt: heldByHalt ? now : null, updated_at: now });
        await record({
          type: 'outcome.escalated',
          actor: 'system',
          reason: clip(`${why}${to.length === 0 ? '; nobody to tell: no owner, approver, on-call recipient or target is known' : ''}`, 1000, '…'),
          trace: p.episode_id,
          data: { service: p.service, to, ...(heldByHalt ? { held_by_halt: true } : {}) },
        });
      },
      { headFirst: true },
    );
    this.#d.teller.nudge();
  }

  /**
   * A path that ends without a mitigation after its action ran: the `verifying` outcome gives way
   * to `escalated` when people were told of the incident already, else to none (the escalation's
   * delivery makes it `escalated`, as for any incident; until then the reason also says who is
   * being told, `to`).
   */
  async #endVerifying(trx: Trx, episodeId: string, why: string, to: string[]): Promise<void> {
    const e = await this.#d.episodes.lock(trx, episodeId);
    if (e === null || e.outcome !== 'verifying') return;
    const told = { told: [...(e.outcome_detail?.told ?? [])], channels: [...(e.outcome_detail?.channels ?? [])] };
    const at = this.#d.clock.now().toISOString();
    const telling = told.told.length === 0 && to.length > 0 ? `; telling ${to.join(', ')}: not delivered yet` : '';
    const reason = clip(`not mitigated: ${why}${telling}`, 2000, '…');
    await this.#d.episodes.setOutcome(trx, episodeId, told.told.length > 0 ? 'escalated' : '', {
      value: told.told.length > 0 ? 'escalated' : null,
      reason,
      at,
      ...told,
    });
  }

  /** The path ends without a mitigation and without telling anyone (`outcome.not_escalated`): `because` says why nobody is. */
  async #endUntold(p: ActionPath, why: string, because: string): Promise<void> {
    await this.#d.ledger.transact(async (trx, record) => {
      if ((await this.#d.paths.held(trx, p.episode_id, p.run, this.#holder)) === null) return;
      await this.#d.paths.save(trx, p.episode_id, { state: 'done', outcome: null, updated_at: this.#d.clock.now().toISOString() });
      await record({
        type: 'outcome.not_escalated',
        actor: 'system',
        reason: clip(`${because}; ${why}`, 1000, '…'),
        trace: p.episode_id,
        data: { service: p.service, why: clip(why, 1000, '…') },
      });
    });
  }

  async #finish(p: ActionPath, outcome: 'mitigated' | 'escalated' | null, why: string): Promise<void> {
    await this.#d.ledger.transact(async (trx) => {
      if ((await this.#d.paths.held(trx, p.episode_id, p.run, this.#holder)) === null) return;
      await this.#d.paths.save(trx, p.episode_id, { state: 'done', outcome, updated_at: this.#d.clock.now().toISOString() });
    });
    this.#d.log.info({ episode: p.episode_id }, `action path ended: ${why}`);
  }

  async #severity(episodeId: string): Promise<'critical' | 'warning' | 'info'> {
    return worstOf((await this.#d.episodes.signalsOf(episodeId)).map((s) => s.severity));
  }

  async #request(episode: Episode, proposal: Proposal, p: ActionPath): Promise<ActionRequest> {
    const publicUrl = await this.#d.consoleAddress.get();
    return {
      kind: proposal.action,
      params: proposal.params,
      episode: {
        id: episode.id,
        service: episode.service,
        alerts: episode.alerts,
        url: publicUrl === null ? null : `${publicUrl}/episodes/${encodeURIComponent(episode.id)}`,
        summary: episode.note ?? '',
      },
      key: `oncall-${episode.id}-${p.run}-${proposal.action}`,
    };
  }
}

function proposalData(p: Proposal): Record<string, unknown> {
  return {
    action: p.action,
    connector: p.connector,
    params: p.params,
    cause: p.cause,
    undo: p.undo,
    verify: p.verify,
    rehearsable: p.rehearsable,
    reversible: p.reversible,
  };
}

/** The diagnosis as notifications carry it, when the findings have one. */
function diagnosisOf(f: Findings): Pick<PeopleMessage, 'diagnosis'> {
  const d = f.diagnosis;
  return d === null ? {} : { diagnosis: { summary: d.summary, holds: d.holds, unknown: d.unknown } };
}
