import type { AlertContext } from '../plugins/contract.ts';

/** What the service knows of one fingerprint's past when it joins an episode. */
export interface Baseline {
  first_seen: string;
  last_seen: string;
  firings_7d: number;
  firings_30d: number;
  flapping: boolean;
}

/** `storm`: one episode holding the alerts a source sent beyond its limits (host/episodes/storm.ts). */
export type EpisodeKind = 'incident' | 'notice' | 'storm';

/**
 * How an episode's outcome came about: `escalated` only once a notification to at least one
 * recipient or target was delivered (`told` says who, `channels` who and how); while nobody has
 * been told, `value` is null and `reason` says why (nobody to tell, messages still on their way).
 */
export interface OutcomeDetail {
  value: string | null;
  reason: string;
  at: string;
  /** Recipients' e-mail addresses and targets' names told of the incident, in the order they were told. */
  told: string[];
  /** Who and how: `{to: "ops@bank.example", how: "e-mail"}`, `{to: "pd-main", how: "pagerduty"}`. */
  channels: Array<{ to: string; how: string }>;
}

/** One episode as stored: what the list shows. */
export interface Episode {
  id: string;
  kind: EpisodeKind;
  state: 'open' | 'closed';
  service: string;
  alerts: string[];
  t_open: string;
  t_open_ms: number;
  t_close: string | null;
  t_close_ms: number | null;
  decision: string;
  outcome: string;
  result: string;
  note: string | null;
  outcome_detail: OutcomeDetail | null;
}

/** One alert of an episode, with the baseline it had when it joined. */
export interface EpisodeAlert {
  fingerprint: string;
  name: string;
  severity: string;
  source: string;
  summary: string;
  joined_at: string;
  ended_at: string | null;
  end_status: 'resolved' | 'released' | null;
  baseline: Baseline;
}

/** An alert of an episode with the labels it had when it joined and what its tool said beyond them. */
export type EpisodeMember = EpisodeAlert & { labels: Record<string, string>; context: AlertContext | null };

/** An episode opened in a window, as the digest counts it. */
export interface OpenedEpisode {
  id: string;
  service: string;
  t_open_ms: number;
  outcome: string;
  /** When it was mitigated (outcome `mitigated`); else null. */
  mitigated_ms: number | null;
}

const SEVERITY_ORDER = ['info', 'warning', 'critical'];

/** Higher is worse; an unknown severity ranks below info. */
export const severityRank = (s: string): number => SEVERITY_ORDER.indexOf(s);

const SEVERITY_RANK: Record<string, number> = { info: 0, warning: 1, critical: 2 };

/** The worst of some severities in the common vocabulary (an unknown value counts as `warning`). */
export function worstOf(severities: string[]): 'critical' | 'warning' | 'info' {
  let worst = -1;
  for (const s of severities) worst = Math.max(worst, SEVERITY_RANK[s] ?? 1);
  return worst >= 2 ? 'critical' : worst === 1 ? 'warning' : 'info';
}
