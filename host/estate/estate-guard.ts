import type { OverrideEntry } from './estate.schema.ts';

/**
 * Which changes of a service's entry wait for two approvals (issue 22: one admin rewrote a tier-1
 * service's tier and approvers and then approved its next action alone). The tier and the
 * approvers are what the acting path's approval rule reads: a tier-1 service's actions need two
 * approvals, and its approvers (else its owner) decide them.
 *
 * - **Lowering the tier**: a higher number, or no tier (counted as 4, the least critical), or
 *   removing the service. Raising it never waits.
 * - **Changing who approves a tier-1 or tier-2 service** (its tier before the change): its
 *   approvers, or its owner while it has no approvers (the owner then approves).
 *
 * Answers the fields that make the change wait, or null when it may apply at once.
 */
export interface GuardedFields {
  tier?: { from: number | null; to: number | null };
  removed?: true;
  approvers?: { from: string[]; to: string[] };
}

const LEAST_CRITICAL = 4;
const tierOf = (e: OverrideEntry | null): number => e?.tier ?? LEAST_CRITICAL;
/** Who decides its actions: its approvers, else its owner (host/acting). */
const deciders = (e: OverrideEntry | null): string[] =>
  [
    ...new Set((e === null ? [] : (e.approvers ?? []).length > 0 ? e.approvers! : e.owner === undefined ? [] : [e.owner]).map((a) => a.trim().toLowerCase())),
  ].sort();

export function guardedFields(before: OverrideEntry, after: OverrideEntry | null): GuardedFields | null {
  const out: GuardedFields = {};
  if (tierOf(after) > tierOf(before)) {
    out.tier = { from: before.tier ?? null, to: after?.tier ?? null };
    if (after === null) out.removed = true;
  }
  if (tierOf(before) <= 2) {
    const from = deciders(before);
    const to = deciders(after);
    if (from.join('\n') !== to.join('\n')) out.approvers = { from, to };
  }
  return Object.keys(out).length === 0 ? null : out;
}
