import type { LedgerEvent } from './entry.ts';
import type { LedgerRepo } from './ledger.repo.ts';

/** A stretch of the chain: seqs [from_seq, to_seq). */
export interface LedgerSpan {
  from_seq: number;
  to_seq: number;
}

/**
 * What other areas may read of the ledger by time (the digest): the seqs a time window covers,
 * then counts or entries of some types inside them, the service's own only (never an event a
 * caller recorded through POST /v1/events: host/ledger/caller-events.ts). The window is found by a binary search on
 * the primary key (seq), since `at` has no index; the types are then read within that seq range
 * only (MySQL by its `type` index, SQLite by scanning the range, which has none).
 */
export interface LedgerWindow {
  span(fromMs: number, toMs: number): Promise<LedgerSpan>;
  count(span: LedgerSpan, types: readonly string[]): Promise<Map<string, number>>;
  /** The newest `limit` entries of `types` in the span, oldest first. */
  events(span: LedgerSpan, types: readonly string[], limit: number): Promise<LedgerEvent[]>;
}

export function ledgerWindow(repo: LedgerRepo): LedgerWindow {
  return {
    span: async (fromMs, toMs) => {
      const from_seq = await repo.firstSeqAt(new Date(fromMs).toISOString());
      const to_seq = await repo.firstSeqAt(new Date(toMs).toISOString());
      return { from_seq, to_seq: Math.max(from_seq, to_seq) };
    },
    count: (span, types) => repo.countTypes(span.from_seq, span.to_seq, types, true),
    events: async (span, types, limit) =>
      (await repo.ofTypes(span.from_seq, span.to_seq, types, limit, true)).map((r) => ({
        ...r,
        seq: Number(r.seq),
        data: JSON.parse(r.data) as Record<string, unknown>,
      })),
  };
}
