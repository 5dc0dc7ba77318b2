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
 * only (MySQL by its `type` index, SQLite by scanning the range, which has none), in chunks of
 * WINDOW_CHUNK seqs that give the event loop a turn between them.
 */
export interface LedgerWindow {
  span(fromMs: number, toMs: number): Promise<LedgerSpan>;
  count(span: LedgerSpan, types: readonly string[]): Promise<Map<string, number>>;
  /** The newest `limit` entries of `types` in the span, oldest first. */
  events(span: LedgerSpan, types: readonly string[], limit: number): Promise<LedgerEvent[]>;
}

/**
 * Seqs read by one statement of `count` and `events`. SQLite scans the range (no `type` index)
 * synchronously, about 0.6 ms per 1,000 rows here: a 90-day window of a busy ledger read in one
 * statement held the event loop for hundreds of milliseconds, and twelve such digests at once
 * stalled /health for seconds. In chunks of 20,000 seqs, with a turn of the event loop between
 * two, nothing else waits more than about 12 ms for one of them.
 */
export const WINDOW_CHUNK = 20_000;

const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export function ledgerWindow(repo: LedgerRepo): LedgerWindow {
  return {
    span: async (fromMs, toMs) => {
      const from_seq = await repo.firstSeqAt(new Date(fromMs).toISOString());
      const to_seq = await repo.firstSeqAt(new Date(toMs).toISOString());
      return { from_seq, to_seq: Math.max(from_seq, to_seq) };
    },
    count: async (span, types) => {
      const total = new Map<string, number>();
      for (let from = span.from_seq; from < span.to_seq; from += WINDOW_CHUNK) {
        if (from > span.from_seq) await yieldTurn();
        for (const [type, n] of await repo.countTypes(from, Math.min(from + WINDOW_CHUNK, span.to_seq), types, true))
          total.set(type, (total.get(type) ?? 0) + n);
      }
      return total;
    },
    events: async (span, types, limit) => {
      // Newest first, chunk by chunk from the top, until `limit` are found.
      let rows: Awaited<ReturnType<LedgerRepo['ofTypes']>> = [];
      for (let to = span.to_seq; to > span.from_seq && rows.length < limit; to -= WINDOW_CHUNK) {
        if (to < span.to_seq) await yieldTurn();
        rows = [...(await repo.ofTypes(Math.max(span.from_seq, to - WINDOW_CHUNK), to, types, limit - rows.length, true)), ...rows];
      }
      return rows.map((r) => ({ ...r, seq: Number(r.seq), data: JSON.parse(r.data) as Record<string, unknown> }));
    },
  };
}
