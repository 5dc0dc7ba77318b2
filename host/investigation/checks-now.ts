import { randomUUID } from 'node:crypto';
import { AppError } from '../errors.ts';
import { clip } from '../text.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Cause, CauseCatalogue } from './catalogue.ts';
import type { CheckInputs } from './context.ts';
import { rank } from './diagnosis.ts';
import type { StoredEvidence, StoredVerdict } from './findings.model.ts';
import { liveSource, type ConnectorReads } from './live-readers.ts';
import { checkService, type EstateEntries } from './retrieval.ts';
import type { VerdictResult } from './run-check.ts';

/** What `POST /v1/checks/run` and `oncall checks run` answer. */
export interface CheckRun {
  service: string;
  at: string;
  verdicts: StoredVerdict[];
  evidence: StoredEvidence[];
}

export interface CheckRunRequest {
  service: string;
  /** One cause id, or null for every cause of the loaded packs. */
  cause: string | null;
  at: Date;
  /** Whether `at` was asked for (else it is now). */
  asked?: boolean;
  /** Write `check.started` / `check.finished` events (actor `actor`); otherwise nothing is written. */
  record: boolean;
  actor: string;
}

/**
 * Runs checks now, outside any episode, read-only against the configured connectors: every cause
 * of the loaded packs (or the one asked for) on the service's estate entry, with no signals.
 * Records `check.` events only when asked to.
 */
export async function checksNow(
  d: {
    catalogue: CauseCatalogue;
    estate: EstateEntries;
    connectors: ConnectorReads;
    ledger: Ledger;
    checkAll: (causes: readonly Cause[], inputs: CheckInputs, source: Awaited<ReturnType<typeof liveSource>>) => Promise<VerdictResult[]>;
  },
  req: CheckRunRequest,
): Promise<CheckRun> {
  const causes = req.cause === null ? d.catalogue.causes : [d.catalogue.get(req.cause)].filter((c): c is Cause => c !== null);
  if (causes.length === 0)
    throw new AppError('not_found', req.cause === null ? 'no pack is loaded: there is no cause to check' : `no loaded pack declares cause ${req.cause}`);
  const at = req.at.toISOString();
  const inputs = outsideEpisode(req.service, await d.estate.find(req.service), at, req.asked === true ? 'asked' : 'now');
  const source = await liveSource(
    { connectors: d.connectors, ledger: d.ledger },
    inputs.service,
    at,
    causes.flatMap((c) => c.reads),
  );
  // In a transaction of the caller's database handle, as every record of a check run by hand:
  // on MySQL `append` would open the ledger's own connection, which the CLI never closes.
  if (req.record)
    await d.ledger.transact(async (_trx, record) => {
      await record({
        type: 'check.started',
        actor: req.actor,
        reason: clip(`checking ${causes.length} cause(s) (run by hand): ${causes.map((c) => c.title).join(', ')}`, 1000, '…'),
        data: { causes: causes.map((c) => c.id), service: req.service, at },
      });
    });
  const ranked = rank(await d.checkAll(causes, inputs, source));
  const evidence: StoredEvidence[] = [];
  const verdicts: StoredVerdict[] = ranked.map((v) => ({
    cause: v.cause,
    title: v.title,
    verdict: v.verdict,
    reason: v.reason,
    obstacle: v.obstacle,
    evidence: v.evidence.map((e) => {
      const id = randomUUID();
      evidence.push({ ...e, id, cause: v.cause });
      return id;
    }),
    took_ms: v.took_ms,
    remedy: v.remedy,
    verification: v.verification,
  }));
  if (req.record)
    await d.ledger.transact(async (_trx, record) => {
      await record(
        verdicts.map((v) => ({
          type: 'check.finished',
          actor: req.actor,
          reason: `${v.title}: ${v.verdict} (run by hand)`,
          data: { cause: v.cause, service: req.service, at, verdict: v.verdict, obstacle: v.obstacle, took_ms: v.took_ms, evidence: v.evidence.length },
        })),
      );
    });
  return { service: req.service, at, verdicts, evidence };
}

/**
 * The inputs of checks run outside any episode (by hand, or by the study): the service's estate
 * entry and its check settings, no alert, no related episodes.
 */
export function outsideEpisode(service: string, view: Awaited<ReturnType<EstateEntries['find']>>, at: string, moment: 'asked' | 'now' = 'now'): CheckInputs {
  return {
    episode: { id: null, service, opened_at: at },
    at,
    moment,
    signals: [],
    service: checkService(service, view),
    related: { dependencies: [], history: [] },
    overrides: view?.check_settings ?? {},
  };
}
