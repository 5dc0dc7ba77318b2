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

export const secondsText = (s: unknown): string =>
  typeof s === 'number' && Number.isFinite(s) ? (s >= 120 ? `${Math.round(s / 60)} min` : `${Math.round(s)} s`) : '?';
