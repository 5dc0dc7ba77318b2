import { DAY, type Clock } from '../clock.ts';
import type { ConnectorService } from '../connectors/connectors.service.ts';
import type { EpisodeFigures } from '../episodes/episode-store.ts';
import type { ApprovalDecision } from '../governance/approvals.model.ts';
import type { ApprovalsService } from '../governance/approvals.service.ts';
import type { HeldAlerts } from '../intake/held-alerts.ts';
import type { LedgerEvent } from '../ledger/entry.ts';
import type { LedgerWindow } from '../ledger/window.ts';
import {
  GOVERNANCE_LIMIT,
  LIST_LIMIT,
  type AutonomyChange,
  type Digest,
  type DigestData,
  type HaltLine,
  type LedgerStandingView,
  type ServiceLine,
  type StudyReports,
} from './digest.ts';
import { renderDigest } from './markdown.ts';
import { percentileSeconds } from './percentile.ts';

const ACTION_TYPES = ['action.executed', 'action.refused', 'action.failed', 'action.undone'] as const;
const AUTONOMY_TYPE = 'governance.autonomy_changed';
const HALT_TYPES = ['governance.halted', 'governance.resumed'] as const;

/** Where each figure comes from: each area's own small interface (no SQL here). */
export interface DigestSources {
  episodes: EpisodeFigures;
  /** The investigation's findings: when each of these episodes was first diagnosed (epoch ms). */
  findings: { diagnosedAt(episodeIds: string[]): Promise<Map<string, number>> };
  /** `decisionsOf`: who approved a raise (the autonomy change names the request). */
  approvals: Pick<ApprovalsService, 'requestedBetween' | 'decisionsOf'>;
  alerts: Pick<HeldAlerts, 'noisiest'>;
  ledger: LedgerWindow;
  connectors: Pick<ConnectorService, 'list'>;
  study: StudyReports;
  standing: { standing(opts?: { fresh?: boolean }): Promise<LedgerStandingView> };
}

/**
 * Gathers the digest of the `days` before a moment (now on the injected clock, or the moment a
 * daily e-mail is due) from the areas that own each figure, and renders its Markdown.
 */
export class DigestService {
  readonly #s: DigestSources;
  readonly #clock: Clock;

  constructor(deps: { sources: DigestSources; clock: Clock }) {
    this.#s = deps.sources;
    this.#clock = deps.clock;
  }

  /**
   * The digest of the `days` before `at` (default now). Builds run one at a time in this
   * process, and a request for "now" made while the same `days` is being built for "now" gets
   * that build: twelve viewers asking for 90 days at once cost one build, not twelve scans of
   * the ledger side by side.
   */
  build(days: number, opts: { at?: Date; freshLedger?: boolean } = {}): Promise<Digest> {
    const shared = opts.at === undefined && opts.freshLedger !== true;
    const running = shared ? this.#building.get(days) : undefined;
    if (running !== undefined) return running;
    const run = this.#lane.then(() => this.#build(days, opts));
    this.#lane = run.catch(() => undefined);
    if (shared) {
      this.#building.set(days, run);
      const forget = () => {
        if (this.#building.get(days) === run) this.#building.delete(days);
      };
      run.then(forget, forget);
    }
    return run;
  }

  /** The builds for "now" under way, by `days`. */
  readonly #building = new Map<number, Promise<Digest>>();
  /** The tail of the builds of this process, one after the other. */
  #lane: Promise<unknown> = Promise.resolve();

  async #build(days: number, opts: { at?: Date; freshLedger?: boolean }): Promise<Digest> {
    const toMs = (opts.at ?? this.#clock.now()).getTime();
    const fromMs = toMs - days * DAY;
    const s = this.#s;
    const span = await s.ledger.span(fromMs, toMs);
    const [opened, closed, approvals, noisy, unplaced, actions, autonomy, halts, connectors, study, ledger] = await Promise.all([
      s.episodes.openedBetween(fromMs, toMs),
      s.episodes.closedBetween(fromMs, toMs),
      s.approvals.requestedBetween(fromMs, toMs),
      s.alerts.noisiest(fromMs, toMs, LIST_LIMIT),
      s.alerts.noisiest(fromMs, toMs, LIST_LIMIT, true),
      s.ledger.count(span, [...ACTION_TYPES, AUTONOMY_TYPE, ...HALT_TYPES]),
      s.ledger.events(span, [AUTONOMY_TYPE], GOVERNANCE_LIMIT),
      s.ledger.events(span, HALT_TYPES, GOVERNANCE_LIMIT),
      s.connectors.list(),
      s.study.latest(),
      s.standing.standing({ fresh: opts.freshLedger === true }),
    ]);
    const diagnosed = await s.findings.diagnosedAt(opened.map((e) => e.id));
    const requests = autonomy.map((e) => text(e.data.request_id)).filter((id): id is string => id !== null);
    const decisions = requests.length === 0 ? [] : await s.approvals.decisionsOf(requests);

    const services = new Map<string, ServiceLine>();
    const line = (service: string): ServiceLine => {
      let l = services.get(service);
      if (l === undefined) services.set(service, (l = { service, opened: 0, closed: 0, mitigated: 0, escalated: 0 }));
      return l;
    };
    for (const e of opened) {
      const l = line(e.service);
      l.opened++;
      if (e.outcome === 'mitigated') l.mitigated++;
      if (e.outcome === 'escalated') l.escalated++;
    }
    for (const c of closed) line(c.service).closed += c.count;
    const byService = [...services.values()].sort((a, b) => b.opened - a.opened || b.closed - a.closed || (a.service < b.service ? -1 : 1));

    const toDiagnosis = opened.flatMap((e) => {
      const at = diagnosed.get(e.id);
      return at === undefined ? [] : [at - e.t_open_ms];
    });
    const toMitigation = opened.flatMap((e) => (e.mitigated_ms === null ? [] : [e.mitigated_ms - e.t_open_ms]));
    const answered = approvals.filter((a) => (a.state === 'approved' || a.state === 'rejected') && a.closed_ms !== null);

    const data: DigestData = {
      days,
      from: new Date(fromMs).toISOString(),
      to: new Date(toMs).toISOString(),
      episodes: {
        opened: opened.length,
        closed: closed.reduce((n, c) => n + c.count, 0),
        by_outcome: { mitigated: byService.reduce((n, l) => n + l.mitigated, 0), escalated: byService.reduce((n, l) => n + l.escalated, 0) },
        by_service: byService,
      },
      times: {
        diagnosis_p50_s: percentileSeconds(toDiagnosis, 0.5),
        diagnosis_p90_s: percentileSeconds(toDiagnosis, 0.9),
        mitigation_p50_s: percentileSeconds(toMitigation, 0.5),
        mitigation_p90_s: percentileSeconds(toMitigation, 0.9),
      },
      actions: {
        executed: actions.get('action.executed') ?? 0,
        refused: actions.get('action.refused') ?? 0,
        failed: actions.get('action.failed') ?? 0,
        undone: actions.get('action.undone') ?? 0,
      },
      approvals: {
        asked: approvals.length,
        approved: approvals.filter((a) => a.state === 'approved').length,
        rejected: approvals.filter((a) => a.state === 'rejected').length,
        expired: approvals.filter((a) => a.state === 'expired').length,
        answer_p50_s: percentileSeconds(
          answered.map((a) => a.closed_ms! - a.requested_ms),
          0.5,
        ),
      },
      governance: {
        autonomy_changes: autonomy.map((e) => autonomyChange(e, decisions)),
        autonomy_changes_left_out: Math.max(0, (actions.get(AUTONOMY_TYPE) ?? 0) - autonomy.length),
        halts: halts.map(haltLine),
        halts_left_out: Math.max(0, HALT_TYPES.reduce((n, type) => n + (actions.get(type) ?? 0), 0) - halts.length),
      },
      noisiest_alerts: noisy,
      unplaced_alerts: unplaced.map(({ service: _service, ...a }) => a),
      study:
        study === null
          ? null
          : {
              finished_at: study.finished_at,
              provable_share: study.provable_share,
              cut_short: study.cut_short,
              holding_now: study.holding_now.map((h) => ({ service: h.service, cause: h.cause })),
            },
      connectors_with_problems: connectors.connectors
        .filter((c) => c.state === 'problem')
        .map((c) => ({ name: c.name, kind: c.kind, problem: c.last_problem, last_checked_at: c.last_checked_at }))
        .sort((a, b) => (a.name < b.name ? -1 : 1)),
      ledger,
    };
    return { ...data, markdown: renderDigest(data) };
  }
}

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** An autonomy change: who asked for it and, for an approved raise, who approved it (the request's decisions). */
function autonomyChange(e: LedgerEvent, decisions: ApprovalDecision[]): AutonomyChange {
  const requestId = text(e.data.request_id);
  return {
    at: e.at,
    service: text(e.data.service) ?? '',
    from: text(e.data.from),
    to: text(e.data.to),
    by: text(e.data.by) ?? e.actor,
    approved_by: decisions.filter((d) => requestId !== null && d.request_id === requestId && d.decision === 'approve').map((d) => d.decider),
    reason: e.reason,
  };
}

function haltLine(e: LedgerEvent): HaltLine {
  return { at: e.at, action: e.type === 'governance.halted' ? 'halted' : 'resumed', by: text(e.data.by) ?? e.actor, reason: e.reason };
}
