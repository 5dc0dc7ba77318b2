import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import type { Trx } from '../storage/db.ts';
import type { Asker } from './asker.ts';
import type { ApprovalsRepo } from './approvals.repo.ts';
import type { ApprovalDecision, ApprovalRequest, ApprovalState, Decision, RequestedApproval } from './approvals.model.ts';
import { APPROVAL_TTL_MS, APPROVALS_NEEDED, type Level } from './levels.ts';
import { clip } from '../text.ts';

/** A request as the API shows it. */
export interface ApprovalView {
  id: string;
  kind: ApprovalRequest['kind'];
  state: ApprovalState;
  service: string;
  /** A raise: from which level to which; null for an action. */
  from: Level | null;
  to: Level | null;
  /** An action: its kind; null for a raise. */
  action: string | null;
  summary: string;
  requested_by: string;
  /** Who made the request as authenticated: the person's e-mail, or `admin-token`. Neither may decide it. */
  requested_actor: string;
  requested_at: string;
  expires_at: string;
  closed_at: string | null;
  approvals_needed: number;
  /** Who may decide it (an action's approvers from the estate); null: any owner or admin. */
  approvers: string[] | null;
  /** The episode an action request is for, or null. */
  episode: string | null;
  /** An estate change: what approving it applies (`{service, before, after, fields}`); null for other kinds. */
  change: unknown;
  decisions: Array<{ by: string; decision: Decision; note: string | null; at: string }>;
}

/** What an action request may set: who decides, how many approvals, how long, which episode. */
export interface ActionAskOptions {
  needed?: number;
  ttlMs?: number;
  approvers?: string[];
  trace?: string;
}

/** Called inside the deciding transaction when a request of this kind is approved. */
export type OnApproved = (trx: Trx, record: RecordEvent, request: ApprovalRequest, decider: string) => Promise<void>;

const EXPIRE_BATCH = 100;

export const view = (r: ApprovalRequest, decisions: ApprovalDecision[]): ApprovalView => ({
  id: r.id,
  kind: r.kind,
  state: r.state,
  service: r.service,
  from: r.from_level,
  to: r.to_level,
  action: r.action,
  summary: r.summary,
  requested_by: r.requested_by,
  requested_actor: r.requested_actor,
  requested_at: r.requested_at,
  expires_at: new Date(r.expires_ms).toISOString(),
  closed_at: r.closed_at,
  approvals_needed: r.approvals_needed ?? APPROVALS_NEEDED,
  approvers: r.approvers,
  episode: r.trace,
  change: r.proposed_change ?? null,
  decisions: decisions.filter((d) => d.request_id === r.id).map((d) => ({ by: d.decider, decision: d.decision, note: d.note, at: d.at })),
});

/**
 * Approval requests (an autonomy raise, or an action an investigation wants to take) and their
 * decisions. A request needs two different approvers, neither the requester; one rejection
 * ends it; it expires 24 hours after it was made. Every request, decision and expiry is a
 * ledger event written in the transaction that makes it.
 */
export class ApprovalsService {
  readonly #repo: ApprovalsRepo;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  #onApproved = new Map<ApprovalRequest['kind'], OnApproved>();

  constructor(deps: { repo: ApprovalsRepo; ledger: Ledger; clock: Clock }) {
    this.#repo = deps.repo;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
  }

  /** What happens, in the same transaction, when a request of `kind` is approved. */
  onApproved(kind: ApprovalRequest['kind'], fn: OnApproved): void {
    this.#onApproved.set(kind, fn);
  }

  /** Requests asked for in [fromMs, toMs), with their states and when each closed (the digest). */
  requestedBetween(fromMs: number, toMs: number): Promise<RequestedApproval[]> {
    return this.#repo.requestedBetween(fromMs, toMs);
  }

  /** The decisions of these requests, oldest first (the digest names who approved a raise). */
  decisionsOf(ids: string[]): Promise<ApprovalDecision[]> {
    return this.#repo.decisionsOf(ids);
  }

  /** How many requests wait for a decision. */
  pendingCount(): Promise<number> {
    return this.#repo.pendingCount();
  }

  async list(opts: { state?: ApprovalState; limit: number }): Promise<ApprovalView[]> {
    const requests = await this.#repo.list(opts);
    const decisions = await this.#repo.decisionsOf(requests.map((r) => r.id));
    return requests.map((r) => view(r, decisions));
  }

  async get(id: string): Promise<ApprovalView> {
    const r = await this.#repo.get(id);
    if (r === null) throw new AppError('not_found', 'no such approval request');
    return view(r, await this.#repo.decisionsOf([id]));
  }

  /** The open raise of each service that has one. */
  openRaises(): Promise<ApprovalRequest[]> {
    return this.#repo.openRaises();
  }

  /** The open raise of `service`, locked for the rest of `trx`. */
  lockOpenRaise(trx: Trx, service: string): Promise<ApprovalRequest | null> {
    return this.#repo.lockOpenRaise(trx, service);
  }

  /** The pending estate change of `service`, locked for the rest of `trx`. */
  lockOpenChange(trx: Trx, service: string): Promise<ApprovalRequest | null> {
    return this.#repo.lockOpen(trx, 'estate_change', service);
  }

  /** The pending estate changes, one per service. */
  openChanges(trx?: Trx): Promise<ApprovalRequest[]> {
    return this.#repo.open('estate_change', trx);
  }

  /**
   * Opens an estate change request inside the caller's transaction (the estate's): decided like
   * an autonomy raise, by two owners or admins other than the requester, within 24 hours.
   */
  async openChange(
    trx: Trx,
    record: RecordEvent,
    ask: { service: string; summary: string; change: unknown; shown: unknown; asker: Asker },
  ): Promise<ApprovalRequest> {
    return this.#open(
      trx,
      record,
      {
        kind: 'estate_change',
        service: ask.service,
        from_level: null,
        to_level: null,
        action: null,
        summary: clip(ask.summary, 1000),
        proposed_change: ask.change,
      },
      ask.asker,
      {},
      ask.shown,
    );
  }

  /** Opens a raise request inside the caller's transaction (the autonomy service's). */
  async openRaise(trx: Trx, record: RecordEvent, ask: { service: string; from: Level; to: Level; asker: Asker }): Promise<ApprovalRequest> {
    return this.#open(
      trx,
      record,
      {
        kind: 'autonomy_raise',
        service: ask.service,
        from_level: ask.from,
        to_level: ask.to,
        action: null,
        summary: `raise ${ask.service} from ${ask.from} to ${ask.to}`,
        proposed_change: null,
      },
      ask.asker,
    );
  }

  /**
   * Asks for approval of an action (there is no endpoint for this yet: investigations will call
   * it). `by` is who asks, e-mail or `system`. The action gate accepts the approved request.
   */
  async requestAction(service: string, kind: string, summary: string, by: string, opts: ActionAskOptions = {}): Promise<ApprovalView> {
    const r = await this.#ledger.transact((trx, record) => this.openAction(trx, record, { service, kind, summary, by, ...opts }), { headFirst: true });
    return view(r, []);
  }

  /**
   * Opens an action request inside the caller's transaction (the acting path's): who may decide it,
   * how many approvals it needs and how long it stays open are the caller's (an action: its
   * service's approvers, two for a tier-1 service, 30 minutes).
   */
  async openAction(
    trx: Trx,
    record: RecordEvent,
    ask: { service: string; kind: string; summary: string; by: string } & ActionAskOptions,
  ): Promise<ApprovalRequest> {
    if (!/^[a-z][a-z0-9_.-]{0,99}$/.test(ask.kind)) throw new AppError('invalid_body', 'an action kind is 1 to 100 lower-case letters, digits, _ . -');
    if (ask.service.length === 0 || ask.service.length > 200) throw new AppError('invalid_body', 'service must be 1 to 200 characters');
    return this.#open(
      trx,
      record,
      { kind: 'action', service: ask.service, from_level: null, to_level: null, action: ask.kind, summary: clip(ask.summary, 1000), proposed_change: null },
      { actor: ask.by, by: ask.by },
      ask,
    );
  }

  async #open(
    trx: Trx,
    record: RecordEvent,
    ask: Pick<ApprovalRequest, 'kind' | 'service' | 'from_level' | 'to_level' | 'action' | 'summary' | 'proposed_change'>,
    asker: Asker,
    opts: ActionAskOptions = {},
    /** What the ledger event says the request would change (an estate change's fields), if anything. */
    shown?: unknown,
  ): Promise<ApprovalRequest> {
    const now = this.#clock.now();
    const r: ApprovalRequest = {
      id: randomUUID(),
      state: 'pending',
      ...ask,
      requested_by: asker.by,
      requested_actor: asker.actor,
      requested_at: now.toISOString(),
      requested_ms: now.getTime(),
      expires_ms: now.getTime() + (opts.ttlMs ?? APPROVAL_TTL_MS),
      closed_at: null,
      approvals_needed: opts.needed ?? null,
      approvers: opts.approvers === undefined ? null : opts.approvers.map((a) => a.trim().toLowerCase()),
      trace: opts.trace ?? null,
    };
    await this.#repo.insert(trx, r);
    await record({
      type: 'governance.approval_requested',
      actor: asker.actor,
      reason: r.summary,
      trace: r.trace,
      data: {
        request_id: r.id,
        kind: r.kind,
        service: r.service,
        from: r.from_level,
        to: r.to_level,
        action: r.action,
        by: asker.by,
        expires_at: new Date(r.expires_ms).toISOString(),
        needed: r.approvals_needed ?? APPROVALS_NEEDED,
        approvers: r.approvers,
        ...(shown === undefined ? {} : { change: shown }),
      },
    });
    return r;
  }

  /**
   * One decision by `decider` (an e-mail, or `admin-token`, which counts as one approver).
   * 409 `approval_closed` once the request is approved, rejected, expired or superseded (an overdue request
   * is expired here, and that is kept); 403 `own_request` for the requester; 409
   * `already_decided` for a second decision by the same person.
   */
  async decide(id: string, decision: Decision, note: string | null, decider: string, admin = true): Promise<ApprovalView> {
    const outcome = await this.#ledger.transact(
      async (trx, record) => {
        const r = await this.#repo.lock(trx, id);
        if (r === null) throw new AppError('not_found', 'no such approval request');
        if (r.state !== 'pending') throw new AppError('approval_closed', `this request is ${r.state} already`);
        const now = this.#clock.now();
        if (now.getTime() >= r.expires_ms) {
          await this.#expire(trx, record, r, now);
          return 'expired' as const;
        }
        const who = decider.trim().toLowerCase();
        if (who === r.requested_by.trim().toLowerCase() || who === r.requested_actor.trim().toLowerCase()) {
          throw new AppError('own_request', 'the person who asked cannot decide their own request');
        }
        if (r.approvers === null && !admin) throw new AppError('forbidden', 'deciding this request needs the admin or owner role');
        if (r.approvers !== null && !r.approvers.includes(who))
          throw new AppError('not_an_approver', `only the approvers of ${r.service} may decide this request (${r.approvers.join(', ')})`);
        const before = await this.#repo.decisionsOf([id], trx);
        if (before.some((d) => d.decider.trim().toLowerCase() === who))
          throw new AppError('already_decided', 'you have decided this request already; it needs someone else');
        const at = now.toISOString();
        await this.#repo.addDecision(trx, { request_id: id, decider: who, decision, note, at, at_ms: now.getTime() });
        const approvals = before.filter((d) => d.decision === 'approve').length + (decision === 'approve' ? 1 : 0);
        const needed = r.approvals_needed ?? APPROVALS_NEEDED;
        const state: ApprovalState = decision === 'reject' ? 'rejected' : approvals >= needed ? 'approved' : 'pending';
        if (state !== 'pending') await this.#repo.close(trx, id, state, at);
        await record({
          type: 'governance.approval_decided',
          actor: who,
          trace: r.trace,
          reason: note ?? `${decision} ${r.summary}`,
          data: {
            request_id: id,
            kind: r.kind,
            service: r.service,
            from: r.from_level,
            to: r.to_level,
            action: r.action,
            decision,
            note,
            approvals,
            needed,
            state,
          },
        });
        if (state === 'approved') await this.#onApproved.get(r.kind)?.(trx, record, { ...r, state, closed_at: at }, who);
        return 'decided' as const;
      },
      { headFirst: true },
    );
    if (outcome === 'expired') throw new AppError('approval_closed', 'this request expired before it was decided');
    return this.get(id);
  }

  /**
   * Closes a pending action request as `superseded` inside the caller's transaction (the acting
   * path's, when a newer run of its episode takes the path over): nobody can approve it any more
   * (409 `approval_closed`). Answers the request as it was found (`pending`: superseded now; any
   * other state: left as it was, e.g. approved a moment before), or null when there is none.
   */
  async supersede(trx: Trx, record: RecordEvent, id: string, why: string): Promise<ApprovalRequest | null> {
    const r = await this.#repo.lock(trx, id);
    if (r === null || r.state !== 'pending' || r.kind !== 'action') return r;
    await this.#repo.close(trx, id, 'superseded', this.#clock.now().toISOString());
    await record({
      type: 'governance.approval_superseded',
      actor: 'system',
      reason: clip(`${why}: ${r.summary}`, 4000, '…'),
      trace: r.trace,
      data: { request_id: r.id, kind: r.kind, service: r.service, action: r.action, approvers: r.approvers },
    });
    return r;
  }

  /** Expires every pending request whose 24 hours are up (the tick calls this). */
  async expireDue(): Promise<number> {
    let total = 0;
    if (!(await this.#repo.anyDue(this.#clock.now().getTime()))) return 0;
    for (;;) {
      const n = await this.#ledger.transact(
        async (trx, record) => {
          const now = this.#clock.now();
          const due = await this.#repo.lockDue(trx, now.getTime(), EXPIRE_BATCH);
          for (const r of due) await this.#expire(trx, record, r, now);
          return due.length;
        },
        { headFirst: true },
      );
      total += n;
      if (n < EXPIRE_BATCH) return total;
    }
  }

  async #expire(trx: Trx, record: RecordEvent, r: ApprovalRequest, now: Date): Promise<void> {
    await this.#repo.close(trx, r.id, 'expired', now.toISOString());
    await record({
      type: 'governance.approval_expired',
      actor: 'system',
      reason: `not decided within ${Math.round((r.expires_ms - r.requested_ms) / 60_000)} minutes: ${r.summary}`,
      trace: r.trace,
      data: { request_id: r.id, kind: r.kind, service: r.service, from: r.from_level, to: r.to_level, action: r.action, requested_by: r.requested_by },
    });
  }

  /** For the action gate: the request, read in `trx` when given. */
  request(id: string, trx?: Trx): Promise<ApprovalRequest | null> {
    return this.#repo.get(id, trx);
  }
}
