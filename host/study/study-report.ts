import type { Obstacle } from '../plugins/contract.ts';
import { OBSTACLES } from '../investigation/read-failure.ts';
import type { Evidence } from '../investigation/evidence.ts';

/** A (service, cause) pair's answer to "could the install prove this cause today?". */
export type StudyVerdict = 'can prove' | "can't yet" | 'at the alert';

/** One judged pair as `GET /v1/study/verdicts` answers it. */
export interface PairVerdict {
  service: string;
  cause: string;
  verdict: StudyVerdict;
  obstacle: Obstacle | null;
  reason: string;
}

/** A pair as the study keeps it: the verdict, and the evidence when the cause holds now. */
export interface JudgedPair extends PairVerdict {
  /** The check's own verdict, null when it was not run (a cause that reads nothing but the alert). */
  check: 'holds' | 'ruled_out' | 'unknown' | null;
  evidence: Evidence[];
}

/** The study's report (issue 16), field for field. */
export interface StudyReport {
  finished_at: string;
  cut_short: boolean;
  /** Pairs that can be proven today over the pairs judged (0 when none was judged). */
  provable_share: number;
  pairs: { total: number; can_prove: number; cant_yet: number; at_the_alert: number };
  /** Causes that hold right now with no alert firing, with the check's evidence. */
  holding_now: Array<{ service: string; cause: string; evidence: Evidence[] }>;
  /** Obstacles of the "can't yet" pairs grouped by kind, most common first. */
  obstacles: Array<{ kind: Obstacle; count: number; fix: string; pairs: Array<{ service: string; cause: string }> }>;
  services: Array<{ service: string; tier: number | null; owner: string | null; provable_share: number; holding_now: number }>;
}

/** What fixes each obstacle kind, and where: a person reads it beside the pairs it blocks. */
export const FIXES: Readonly<Record<Obstacle, string>> = {
  'nothing connected can read it':
    "Add a connector that reads what these causes need (metrics: a prometheus connector; changes: a git connector) on the console's Connectors page, and link the service's repositories on its estate page.",
  'several connections could answer':
    "Name the connector that serves each service: set a link naming the connector (a workload link for metrics, a repository link for changes) on the service's estate page.",
  "the data isn't there":
    "The connector answered but had no data for the service: check that its exporter is scraped and that the workload link on the service's estate page matches the labels the data carries.",
  'the read was refused or failed':
    "A read was refused or failed: open the connector on the console's Connectors page, test it and fix its URL, credentials or permissions.",
  "it can't be placed":
    "The study cannot tell which data belongs to the service: set a workload link (job, namespace or instance matcher) on the service's estate page.",
};

const share = (n: number, of: number): number => (of === 0 ? 0 : Math.round((n / of) * 10_000) / 10_000);

/**
 * The report of a study from its judged pairs (in the study's order) and the estate's facts of
 * each service studied. Pure: the same pairs give the same report.
 */
export function buildReport(
  pairs: readonly JudgedPair[],
  services: ReadonlyArray<{ service: string; tier: number | null; owner: string | null }>,
  finishedAt: string,
  cutShort: boolean,
): StudyReport {
  const count = (v: StudyVerdict, of: readonly JudgedPair[]) => of.filter((p) => p.verdict === v).length;
  const holding = pairs.filter((p) => p.check === 'holds');
  const groups = new Map<Obstacle, Array<{ service: string; cause: string }>>();
  for (const p of pairs) {
    if (p.verdict !== "can't yet" || p.obstacle === null) continue;
    const g = groups.get(p.obstacle) ?? [];
    g.push({ service: p.service, cause: p.cause });
    groups.set(p.obstacle, g);
  }
  const obstacles = [...groups.entries()]
    .map(([kind, ps]) => ({ kind, count: ps.length, fix: FIXES[kind], pairs: ps }))
    .sort((a, b) => b.count - a.count || OBSTACLES.indexOf(a.kind) - OBSTACLES.indexOf(b.kind));
  return {
    finished_at: finishedAt,
    cut_short: cutShort,
    provable_share: share(count('can prove', pairs), pairs.length),
    pairs: { total: pairs.length, can_prove: count('can prove', pairs), cant_yet: count("can't yet", pairs), at_the_alert: count('at the alert', pairs) },
    holding_now: holding.map((p) => ({ service: p.service, cause: p.cause, evidence: p.evidence })),
    obstacles,
    services: services
      .map((s) => {
        const mine = pairs.filter((p) => p.service === s.service);
        return {
          service: s.service,
          tier: s.tier,
          owner: s.owner,
          provable_share: share(count('can prove', mine), mine.length),
          holding_now: mine.filter((p) => p.check === 'holds').length,
        };
      })
      .filter((s) => pairs.some((p) => p.service === s.service)),
  };
}
