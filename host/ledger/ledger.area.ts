import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { InstallIdentity } from '../install/identity.ts';
import type { Logger } from '../log.ts';
import type { Db } from '../storage/db.ts';
import type { UnitOfWork } from '../storage/unit-of-work.ts';
import { CallerEvents } from './caller-events.ts';
import { Checkpointer } from './checkpoints.ts';
import { LedgerRepo } from './ledger.repo.ts';
import { ledgerRoutes } from './ledger.routes.ts';
import { Ledger } from './ledger.service.ts';
import { verifyChain, type VerifyOptions, type VerifyReport } from './verify.ts';
import { ledgerWindow, type LedgerWindow } from './window.ts';

export interface LedgerArea extends Area {
  readonly ledger: Ledger;
  readonly checkpoints: Checkpointer;
  verify(opts?: VerifyOptions): Promise<VerifyReport>;
  /** Reading entries of some types by time (the digest). */
  readonly window: LedgerWindow;
  /** Ends the ledger's own connections (before the database goes). */
  close(): Promise<void>;
}

/** The hash-chained ledger and its checkpoints; owns `ledger` and the checkpoint file. */
export async function createLedgerArea(d: {
  db: Db;
  work: UnitOfWork;
  identity: InstallIdentity;
  clock: Clock;
  dataDir: string;
  log: Logger;
}): Promise<LedgerArea> {
  const repo = new LedgerRepo(d.db);
  const ledger = new Ledger({ repo, clock: d.clock, work: d.work });
  const checkpoints = new Checkpointer({ repo, identity: d.identity, clock: d.clock, dataDir: d.dataDir, log: d.log });
  ledger.onCommit((head) => {
    checkpoints.maybeWrite(head).catch((err: unknown) => d.log.error({ err }, 'checkpoint failed'));
  });
  // A checkpoint the last run owed (it stopped between a commit and its checkpoint) is written
  // before anything else is appended: verify counts on it (CHECKPOINT_MAX_GAP).
  await checkpoints.maybeWrite().catch((err: unknown) => d.log.error({ err }, 'checkpoint failed'));
  const verify = (opts?: VerifyOptions) => verifyChain(repo, d.identity, checkpoints.file, opts);
  return {
    ledger,
    checkpoints,
    verify,
    window: ledgerWindow(repo),
    close: () => repo.close(),
    routes: ({ server, log, guard }: Http) => ledgerRoutes(server, { log, guard, ledger, callers: new CallerEvents(ledger), verify }),
  };
}
