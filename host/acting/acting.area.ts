import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { ServiceView } from '../estate/estate.model.ts';
import type { Governance } from '../governance/governance.ts';
import type { Findings } from '../investigation/findings.model.ts';
import type { VerdictResult } from '../investigation/run-check.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { Notifier } from '../notify/notifier.ts';
import type { PolicyService } from '../policy/policy.service.ts';
import type { Db, Trx } from '../storage/db.ts';
import { ActingService, type ActedEpisodes, type ActionConnectors } from './acting.service.ts';
import { ActionPathsRepo } from './paths.repo.ts';
import { actingRoutes } from './acting.routes.ts';

/** Acting's store, built below the investigation (a diagnosis asks for the path in its own transaction). */
export function createActionPaths(db: Db): ActionPathsRepo {
  return new ActionPathsRepo(db);
}

export interface ActingArea extends Area {
  readonly acting: ActingService;
}

/**
 * Acting: from a diagnosis to a fixed incident inside every guard (proposal, policy decision,
 * rehearsal, approval, the action gate, the connector's action, verification), or an escalation.
 * See docs/acting.md.
 */
export function createActingArea(d: {
  paths: ActionPathsRepo;
  findings: { of(episodeId: string): Promise<Findings | null> };
  episodes: ActedEpisodes;
  estate: { find(name: string): Promise<ServiceView | null> };
  people: { firstOwner(): Promise<string | null> };
  governance: Governance;
  policy: Pick<PolicyService, 'current'>;
  connectors: ActionConnectors;
  verifier: { verify(episodeId: string, cause: string): Promise<VerdictResult | null> };
  notifier: Notifier;
  /** Which normaliser reads a source word (intake's normalisers). */
  normaliserOf(source: string): string;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  /** The console's address for links in approval requests and escalations. */
  consoleAddress: { get(trx?: Trx): Promise<string | null> };
}): ActingArea {
  const g = d.governance;
  const acting = new ActingService({
    paths: d.paths,
    findings: d.findings,
    episodes: d.episodes,
    estate: d.estate,
    people: d.people,
    governance: {
      levelOf: (service) => g.autonomy.levelOf(service),
      halted: async () => (await g.halt.state()).halted,
      policy: () => d.policy.current(),
      ranSince: (service, sinceMs) => g.gate.ranSince(service, sinceMs),
      authorise: (ask) => g.gate.authorise(undefined, ask),
      ran: (ask) => g.gate.ran(undefined, ask),
      openAction: (trx, record, ask) => g.approvals.openAction(trx, record, ask),
      supersede: (trx, record, id, why) => g.approvals.supersede(trx, record, id, why),
      approval: (id) => g.approvals.get(id),
    },
    connectors: d.connectors,
    verifier: d.verifier,
    teller: {
      escalate: (trx, change) => d.notifier.tellPeople(trx, { event: 'incident.escalated', ...change }),
      askApproval: (trx, change) => d.notifier.tellPeople(trx, { event: 'incident.approval_requested', ...change }),
      withdrawApproval: (trx, change) => d.notifier.tellPeople(trx, { event: 'incident.approval_superseded', ...change }),
      nudge: () => d.notifier.nudge(),
    },
    normaliserOf: d.normaliserOf,
    ledger: d.ledger,
    clock: d.clock,
    log: d.log.child({ component: 'acting' }),
    consoleAddress: d.consoleAddress,
  });
  // What the halt held back is proposed again at once after a resume, not at the next tick.
  g.halt.onResumed(() => acting.nudge());
  // An approved action request runs at once, not at the next tick.
  g.approvals.onApproved('action', async () => {
    setImmediate(() => acting.nudge());
  });
  return { acting, routes: ({ server, log, guard }: Http) => actingRoutes(server, { log, guard, acting }) };
}
