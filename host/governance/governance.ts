import path from 'node:path';
import type { Clock } from '../clock.ts';
import type { Area, Http } from '../area.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { Db } from '../storage/db.ts';
import { ActionRunsRepo } from './action-runs.repo.ts';
import { ActionGate } from './action-gate.ts';
import { ApprovalsRepo } from './approvals.repo.ts';
import { ApprovalsService } from './approvals.service.ts';
import { AutonomyFileService } from './autonomy-file.service.ts';
import { AUTONOMY_FILE } from './autonomy.file.ts';
import { AutonomyRepo } from './autonomy.repo.ts';
import type { StudyReports } from '../study/study-store.ts';
import { AutonomyService } from './autonomy.service.ts';
import { governanceRoutes } from './governance.routes.ts';
import { HaltRepo } from './halt.repo.ts';
import { HaltService } from './halt.service.ts';
import { RaiseMail, type RaiseMailDeps } from './raise-mail.ts';
import type { ConnectorCoverage, KnownServices, PolicyReader, ServiceFacts } from './levels.ts';

/** The governance area as the rest of the host sees it. */
export interface Governance extends Area {
  readonly autonomy: AutonomyService;
  readonly approvals: ApprovalsService;
  readonly halt: HaltService;
  /** Every action passes `gate.authorise(trx?, {service, kind, approvalId?})` right before it runs. */
  readonly gate: ActionGate;
  /** autonomy.json: the levels it grants (the only way to L2); `file.sync()` re-reads it. */
  readonly file: AutonomyFileService;
  /** The e-mails telling owners and admins of a raise that waits for them; `idle()` for tests and shutdown. */
  readonly raiseMail: RaiseMail | null;
  /** The tick's share: re-read autonomy.json, expire approval requests older than 24 hours. */
  tick(): Promise<void>;
}

/**
 * The approval requests and decisions, built below the estate (whose guarded changes open
 * requests) and handed to governance, which owns them.
 */
export function createApprovals(deps: { db: Db; ledger: Ledger; clock: Clock }): ApprovalsService {
  return new ApprovalsService({ repo: new ApprovalsRepo(deps.db), ledger: deps.ledger, clock: deps.clock });
}

/**
 * Builds governance on `db`; owns `halt`, `approvals`, `autonomy` and `action_runs`, and the
 * `autonomy_file` settings document. Brings autonomy.json into force before it answers.
 */
export async function createGovernance(deps: {
  db: Db;
  settings: SettingsStore;
  log: Logger;
  ledger: Ledger;
  clock: Clock;
  policy: PolicyReader;
  coverage: ConnectorCoverage;
  known: KnownServices;
  /** SERVICE_CONFIG_DIR, where autonomy.json is read from; null: no file grants a level. */
  configDir: string | null;
  /** The estate's facts (owner); without them every service lacks an owner. */
  facts?: ServiceFacts;
  /** The latest study's report (readiness says what it found); without it no service has been studied. */
  studies?: StudyReports;
  /** The approvals built below the estate (createApprovals); made here when not given. */
  approvals?: ApprovalsService;
  /** Mail and the people who may approve a raise; without them nobody is e-mailed of one. */
  raiseMail?: Omit<RaiseMailDeps, 'ledger' | 'log'>;
  /** false (the CLI's build): autonomy.json is not brought into force. */
  start?: boolean;
}): Promise<Governance> {
  const { db, log, ledger, clock } = deps;
  const haltRepo = new HaltRepo(db);
  const halt = new HaltService({ repo: haltRepo, ledger, clock });
  const approvals = deps.approvals ?? createApprovals({ db, ledger, clock });
  const autonomyRepo = new AutonomyRepo(db);
  const raiseMail = deps.raiseMail === undefined ? null : new RaiseMail({ ...deps.raiseMail, ledger, log: log.child({ component: 'raise-mail' }) });
  const file = new AutonomyFileService({
    file: deps.configDir === null ? null : path.join(deps.configDir, AUTONOMY_FILE),
    repo: autonomyRepo,
    settings: deps.settings,
    policy: deps.policy,
    ledger,
    clock,
    log,
  });
  const autonomy = new AutonomyService({
    repo: autonomyRepo,
    approvals,
    halt,
    policy: deps.policy,
    coverage: deps.coverage,
    known: deps.known,
    facts: deps.facts,
    ...(deps.studies === undefined ? {} : { studies: deps.studies }),
    file,
    ledger,
    clock,
    ...(raiseMail === null ? {} : { raiseMail }),
  });
  const gate = new ActionGate({ halt: haltRepo, approvals, autonomy, policy: deps.policy, runs: new ActionRunsRepo(db), ledger, clock, log });
  if (deps.start !== false) await file.sync();
  return {
    autonomy,
    approvals,
    halt,
    gate,
    file,
    raiseMail,
    tick: async () => {
      await file.sync();
      await approvals.expireDue();
    },
    routes: ({ server, log, guard }: Http) => governanceRoutes(server, { log, guard, autonomy, approvals, halt }),
  };
}
