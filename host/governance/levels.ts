import type { PolicyDocument } from '../policy/policy.schema.ts';
import type { Trx } from '../storage/db.ts';
/** Autonomy levels in order: `off` < `shadow` (records only) < `L1` (asks before acting) < `L2`. */
export const LEVELS = ['off', 'shadow', 'L1', 'L2'] as const;
export type Level = (typeof LEVELS)[number];

/** The levels the API accepts; L2 cannot be set through it. */
export const API_LEVELS = ['off', 'shadow', 'L1'] as const;
export type ApiLevel = (typeof API_LEVELS)[number];

export const rank = (l: Level): number => LEVELS.indexOf(l);
export const isLevel = (v: unknown): v is Level => typeof v === 'string' && (LEVELS as readonly string[]).includes(v);

/** What governance reads from the policy (built by the policy area). */
export type GovernedPolicy = Pick<
  PolicyDocument,
  'default_autonomy' | 'ceilings' | 'safe_for_l2' | 'always_approve' | 'freeze_windows' | 'max_actions_per_service_per_hour'
>;
export interface PolicyReader {
  /** Inside a transaction pass it: on SQLite that transaction holds the only connection. */
  current(trx?: Trx): Promise<GovernedPolicy>;
}

/** Whether some connector can read a service's signals (built by the connectors area). */
export interface ConnectorCoverage {
  covers(service: string): Promise<boolean>;
}

/** The services the install knows of: today those named by alerts; later the estate. */
export interface KnownServices {
  knownServices(): Promise<string[]>;
}

/** What the estate says of a service, for readiness (built by the estate area). */
export interface ServiceFacts {
  /** The owner's e-mail; null when the estate names none. */
  ownerOf(service: string): Promise<string | null>;
}

/** How long an approval request stays open. */
export const APPROVAL_TTL_MS = 24 * 60 * 60 * 1000;
/** Distinct approvers a request needs. */
export const APPROVALS_NEEDED = 2;
