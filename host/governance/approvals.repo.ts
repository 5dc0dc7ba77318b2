import { dialect, type Db, type Trx } from '../storage/db.ts';
import type { ApprovalKind, ApprovalState, ApprovalRequest, RequestedApproval, ApprovalDecision } from './approvals.model.ts';

const COLUMNS = [
  'id',
  'kind',
  'state',
  'service',
  'from_level',
  'to_level',
  'action',
  'summary',
  'requested_by',
  'requested_actor',
  'requested_at',
  'requested_ms',
  'expires_ms',
  'closed_at',
  'approvals_needed',
  'approvers',
  'trace',
  'proposed_change',
];
type Row = Omit<ApprovalRequest, 'approvers' | 'proposed_change'> & {
  requested_ms: number | string;
  expires_ms: number | string;
  approvers: string | null;
  proposed_change: string | null;
};
const fromRow = (r: Row): ApprovalRequest => ({
  ...r,
  requested_ms: Number(r.requested_ms),
  expires_ms: Number(r.expires_ms),
  approvals_needed: r.approvals_needed === null ? null : Number(r.approvals_needed),
  approvers: r.approvers === null ? null : (JSON.parse(r.approvers) as string[]),
  proposed_change: r.proposed_change === null || r.proposed_change === undefined ? null : (JSON.parse(r.proposed_change) as unknown),
});
/** Kinds of which a service has at most one pending request (the unique `open_key`). */
const ONE_OPEN: readonly ApprovalKind[] = ['autonomy_raise', 'estate_change'];
const decisionFromRow = (r: ApprovalDecision): ApprovalDecision => ({ ...r, at_ms: Number(r.at_ms) });
/** The unique key that allows one open raise per service. */
const openKey = (r: Pick<ApprovalRequest, 'kind' | 'service'>): string => `${r.kind}:${r.service}`;

/** The only code that touches `approval_requests` and `approval_decisions`. */
export class ApprovalsRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async insert(trx: Trx, r: ApprovalRequest): Promise<void> {
    await trx('approval_requests').insert({
      ...r,
      approvers: r.approvers === null ? null : JSON.stringify(r.approvers),
      proposed_change: r.proposed_change === null ? null : JSON.stringify(r.proposed_change),
      open_key: ONE_OPEN.includes(r.kind) && r.state === 'pending' ? openKey(r) : null,
    });
  }

  /** The pending raise of `service`, locked on MySQL (a second raise waits for the first). */
  async lockOpenRaise(trx: Trx, service: string): Promise<ApprovalRequest | null> {
    return this.lockOpen(trx, 'autonomy_raise', service);
  }

  /** The pending request of `kind` (one of ONE_OPEN) for `service`, locked on MySQL. */
  async lockOpen(trx: Trx, kind: ApprovalKind, service: string): Promise<ApprovalRequest | null> {
    const q = trx('approval_requests')
      .select(COLUMNS)
      .where({ open_key: openKey({ kind, service }) });
    const row = (await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }

  async lock(trx: Trx, id: string): Promise<ApprovalRequest | null> {
    const q = trx('approval_requests').select(COLUMNS).where({ id });
    const row = (await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }

  async get(id: string, trx?: Trx): Promise<ApprovalRequest | null> {
    const row = (await (trx ?? this.#db)('approval_requests').select(COLUMNS).where({ id }).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }

  /** Closes a request: its state, when, and the open-raise key freed. */
  async close(trx: Trx, id: string, state: Exclude<ApprovalState, 'pending'>, at: string): Promise<void> {
    await trx('approval_requests').where({ id }).update({ state, closed_at: at, open_key: null });
  }

  /** Whether any pending request's time is up (read without locks, to skip needless work). */
  async anyDue(nowMs: number): Promise<boolean> {
    return (await this.#db('approval_requests').select('id').where({ state: 'pending' }).andWhere('expires_ms', '<=', nowMs).first()) !== undefined;
  }

  /** Pending requests whose time is up, oldest first, locked on MySQL. */
  async lockDue(trx: Trx, nowMs: number, limit: number): Promise<ApprovalRequest[]> {
    const q = trx('approval_requests').select(COLUMNS).where({ state: 'pending' }).andWhere('expires_ms', '<=', nowMs).orderBy('expires_ms').limit(limit);
    return ((await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q)) as Row[]).map(fromRow);
  }

  /** How many requests wait for a decision (GET /metrics). */
  async pendingCount(): Promise<number> {
    const row = (await this.#db('approval_requests').count({ n: '*' }).where({ state: 'pending' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  /** Open raises by service. */
  async openRaises(): Promise<ApprovalRequest[]> {
    return this.open('autonomy_raise');
  }

  /** The pending requests of one of the ONE_OPEN kinds, one per service. */
  async open(kind: ApprovalKind, trx?: Trx): Promise<ApprovalRequest[]> {
    return ((await (trx ?? this.#db)('approval_requests').select(COLUMNS).whereNotNull('open_key').andWhere({ kind })) as Row[]).map(fromRow);
  }

  /** Requests, newest first, optionally of one state. */
  async list(opts: { state?: ApprovalState; limit: number }): Promise<ApprovalRequest[]> {
    const q = this.#db('approval_requests')
      .select(COLUMNS)
      .orderBy([
        { column: 'requested_ms', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(opts.limit);
    if (opts.state !== undefined) q.where({ state: opts.state });
    return ((await q) as Row[]).map(fromRow);
  }

  /**
   * Requests asked for in [fromMs, toMs) (the `requested_ms` index): each one's state and when it
   * closed, for the digest's counts and answer times. At most 100,000, the oldest first.
   */
  async requestedBetween(fromMs: number, toMs: number): Promise<RequestedApproval[]> {
    const rows = (await this.#db('approval_requests')
      .select('state', 'requested_ms', 'closed_at')
      .where('requested_ms', '>=', fromMs)
      .andWhere('requested_ms', '<', toMs)
      .orderBy('requested_ms')
      .limit(100_000)) as Array<{ state: ApprovalState; requested_ms: number | string; closed_at: string | null }>;
    return rows.map((r) => {
      const closed = r.closed_at === null ? NaN : Date.parse(r.closed_at);
      return { state: r.state, requested_ms: Number(r.requested_ms), closed_ms: Number.isNaN(closed) ? null : closed };
    });
  }

  async addDecision(trx: Trx, d: ApprovalDecision): Promise<void> {
    await trx('approval_decisions').insert(d);
  }

  async decisionsOf(ids: string[], trx?: Trx): Promise<ApprovalDecision[]> {
    const out: ApprovalDecision[] = [];
    for (let i = 0; i < ids.length; i += 500) {
      const rows = (await (trx ?? this.#db)('approval_decisions')
        .whereIn('request_id', ids.slice(i, i + 500))
        .orderBy([{ column: 'at_ms' }, { column: 'decider' }])) as ApprovalDecision[];
      out.push(...rows.map(decisionFromRow));
    }
    return out;
  }
}
