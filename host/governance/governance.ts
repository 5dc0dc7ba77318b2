import type { Clock } from '../clock.ts';
import type { Area, Http } from '../area.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { Db } from '../storage/db.ts';
import { ActionRunsRepo } from './action-runs.repo.ts';
import { ActionGate } from './action-gate.ts';
import { ApprovalsRepo } from './approvals.repo.ts';
import { ApprovalsService } from './approvals.service.ts';
import { AutonomyRepo } from './autonomy.repo.ts';
import { AutonomyService } from './autonomy.service.ts';
import { governanceRoutes } from './governance.routes.ts';
import { HaltRepo } from './halt.repo.ts';
import { HaltService } from './halt.service.ts';
import type { ConnectorCoverage, KnownServices, PolicyReader, ServiceFacts } from './levels.ts';

/** The governance area as the rest of the host sees it. */
export interface Governance extends Area {
  readonly autonomy: AutonomyService;
  readonly approvals: ApprovalsService;
  readonly halt: HaltService;
  /** Every action passes `gate.authorise(trx?, {service, kind, approvalId?})` right before it runs. */
  readonly gate: ActionGate;
  /** The tick's share: expire approval requests older than 24 hours. */
  tick(): Promise<void>;
}

/** Builds governance on `db`; owns `halt`, `approvals`, `autonomy` and `action_runs`. */
export function createGovernance(deps: {
  db: Db;
  log: Logger;
  ledger: Ledger;
  clock: Clock;
  policy: PolicyReader;
  coverage: ConnectorCoverage;
  known: KnownServices;
  /** The estate's facts (owner); without them every service lacks an owner. */
  facts?: ServiceFacts;
}): Governance {
  const { db, log, ledger, clock } = deps;
  const haltRepo = new HaltRepo(db);
  const halt = new HaltService({ repo: haltRepo, ledger, clock });
  const approvals = new ApprovalsService({ repo: new ApprovalsRepo(db), ledger, clock });
  const autonomy = new AutonomyService({
    repo: new AutonomyRepo(db),
    approvals,
    halt,
    policy: deps.policy,
    coverage: deps.coverage,
    known: deps.known,
    facts: deps.facts,
    ledger,
    clock,
  });
  const gate = new ActionGate({ halt: haltRepo, approvals, autonomy, policy: deps.policy, runs: new ActionRunsRepo(db), ledger, clock, log });
  return {
    autonomy,
    approvals,
    halt,
    gate,
    tick: async () => void (await approvals.expireDue()),
    routes: ({ server, log, guard }: Http) => governanceRoutes(server, { log, guard, autonomy, approvals, halt }),
  };
}
