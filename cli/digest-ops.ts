import { createEpisodeStore } from '../host/episodes/episode-store.ts';
import { DigestService } from '../host/digest/digest.service.ts';
import { LedgerStanding } from '../host/digest/ledger-standing.ts';
import { systemClock } from '../host/clock.ts';
import { ApprovalsRepo } from '../host/governance/approvals.repo.ts';
import { createHeldStore } from '../host/intake/held-store.ts';
import { createFindings } from '../host/investigation/investigation.area.ts';
import { LedgerRepo } from '../host/ledger/ledger.repo.ts';
import { ledgerWindow } from '../host/ledger/window.ts';
import type { CliContext } from './context.ts';
import { openOps } from './ops.ts';
import { createStudyStore } from '../host/study/study-store.ts';

/**
 * The digest as the host builds it (the same DigestService and the same reads of each area),
 * opened in the CLI's process on the service's database. It only reads.
 */
export async function openDigest(ctx: CliContext): Promise<DigestService> {
  const { connectors } = await openOps(ctx);
  const ledger = new LedgerRepo(ctx.db);
  return new DigestService({
    sources: {
      episodes: createEpisodeStore(ctx.db).figures,
      findings: createFindings(ctx.db),
      approvals: new ApprovalsRepo(ctx.db),
      alerts: createHeldStore(ctx.db).alerts,
      ledger: ledgerWindow(ledger),
      connectors,
      study: createStudyStore(ctx.db).reports,
      standing: new LedgerStanding({ verify: () => ctx.verifyLedger(), head: () => ledger.head(), clock: systemClock }),
    },
    clock: systemClock,
  });
}
