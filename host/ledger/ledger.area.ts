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
import { Witness, type WitnessTarget } from './witness.ts';

/** The ledger's store, as code outside the running service reads it (backup, restore: open, verify, head). */
export type LedgerStore = LedgerRepo;

/** Opens the ledger's store on a database opened outside the running service (backup, restore). */
export function openLedgerStore(db: Db): LedgerStore {
  return new LedgerRepo(db);
}

/** A verify's result as GET /metrics shows it. */
export interface LastVerify {
  ok: boolean;
  problem: string | null;
  /** When it finished, ms (service clock). */
  atMs: number;
}

export interface LedgerArea extends Area {
  readonly ledger: Ledger;
  readonly checkpoints: Checkpointer;
  verify(opts?: VerifyOptions): Promise<VerifyReport>;
  /** The last verify this process ran (GET /v1/ledger/verify, the doctor, the digest, …), or null. */
  lastVerify(): LastVerify | null;
  /** Reading entries of some types by time (the digest). */
  readonly window: LedgerWindow;
  /** How each configured witness fares (the doctor). */
  witnesses(): Array<{ target: string; delivered_seq: number | null; failing: boolean }>;
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
  /** SERVICE_LEDGER_WITNESS: where each checkpoint is also sent. */
  witnesses?: readonly WitnessTarget[];
  /** false (the CLI's build): this process writes and sends no checkpoint; the service's tick writes those due. */
  start?: boolean;
}): Promise<LedgerArea> {
  const repo = new LedgerRepo(d.db);
  const ledger = new Ledger({ repo, clock: d.clock, work: d.work });
  const witness = new Witness({ targets: d.witnesses ?? [], log: d.log });
  const checkpoints = new Checkpointer({ repo, identity: d.identity, clock: d.clock, dataDir: d.dataDir, log: d.log, witness });
  if (d.start !== false) {
    ledger.onCommit((head) => {
      checkpoints.maybeWrite(head).catch((err: unknown) => d.log.error({ err }, 'checkpoint failed'));
    });
    // A checkpoint the last run owed (it stopped between a commit and its checkpoint) is written
    // before anything else is appended: verify counts on it (CHECKPOINT_MAX_GAP).
    await checkpoints.maybeWrite().catch((err: unknown) => d.log.error({ err }, 'checkpoint failed'));
    // A witness that was down, or this host's restart: the latest checkpoint goes out now.
    void checkpoints.witnessLatest().catch((err: unknown) => d.log.error({ err }, 'checkpoint witness failed'));
  }
  let last: LastVerify | null = null;
  const verify = async (opts?: VerifyOptions) => {
    const report = await verifyChain(repo, d.identity, checkpoints.file, opts);
    last = { ok: report.ok, problem: report.problem, atMs: d.clock.now().getTime() };
    return report;
  };
  return {
    ledger,
    checkpoints,
    verify,
    lastVerify: () => last,
    window: ledgerWindow(repo),
    witnesses: () => witness.status(),
    close: () => repo.close(),
    routes: ({ server, log, guard }: Http) => ledgerRoutes(server, { log, guard, ledger, callers: new CallerEvents(ledger), verify }),
  };
}
