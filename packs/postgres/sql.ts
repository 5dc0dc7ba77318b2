import type { CapabilityReading, CheckContext, EvidenceInput } from '../../host/plugins/contract.ts';

/** What a declared statement answered, its rows as objects by column. */
export interface SqlRows {
  reading: CapabilityReading;
  rows: Array<Record<string, unknown>>;
  truncated: boolean;
}

/** Runs one of the pack's declared statements (statements.ts) through the `sql` capability. */
export async function statement(ctx: CheckContext, name: string): Promise<SqlRows> {
  const reading = await ctx.read('sql', { name });
  const a = reading.answer as { columns: string[]; rows: unknown[][]; truncated: boolean };
  return { reading, rows: a.rows.map((r) => Object.fromEntries(a.columns.map((c, i) => [c, r[i]]))), truncated: a.truncated };
}

/** The evidence of a statement's answer: the statement as a person re-runs it, what it answered. */
export function sqlEvidence(r: SqlRows, observed: unknown, excerpt: string): EvidenceInput {
  return { source: r.reading.source, kind: 'sql', query: r.reading.query, at: r.reading.at, observed, excerpt };
}

/** A session as a sentence names it: `pid 4242 (user app, application "billing", from 10.0.0.5)`. */
export function session(pid: unknown, user: unknown, application: unknown, client: unknown): string {
  const parts = [
    typeof user === 'string' && user !== '' ? `user ${user}` : null,
    typeof application === 'string' && application !== '' ? `application "${application}"` : null,
    typeof client === 'string' && client !== '' ? `from ${client}` : null,
  ].filter((x) => x !== null);
  return `pid ${String(pid)}${parts.length > 0 ? ` (${parts.join(', ')})` : ''}`;
}

export const secondsText = (s: unknown): string =>
  typeof s === 'number' && Number.isFinite(s) ? (s >= 120 ? `${Math.round(s / 60)} min` : `${Math.round(s)} s`) : '?';
