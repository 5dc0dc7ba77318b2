import type { InstallIdentity } from '../install/identity.ts';
import { checkpointMessage, readCheckpointFile } from './checkpoints.ts';
import { entryHash, entryText, GENESIS_HASH, type ChainHead, type StoredEntry } from './entry.ts';
import type { Checkpoint, LedgerRepo } from './ledger.repo.ts';

export type VerifyProblem =
  | 'seq_gap'
  | 'prev_hash_mismatch'
  | 'hash_mismatch'
  | 'head_mismatch'
  | 'checkpoint_mismatch'
  | 'truncated'
  | 'checkpoint_invalid';

export interface VerifyReport {
  ok: boolean;
  checked: number;
  first_bad_seq: number | null;
  head: ChainHead;
  /** The last checkpoint the chain matched, if any. */
  checkpoint: { seq: number; hash: string; at: string } | null;
  problem: VerifyProblem | null;
}

/** Rows per database round trip; small enough that a page never outlives the young generation. */
const PAGE = 1000;

/**
 * Streams the chain in pages (constant memory) and checks, in order: consecutive seqs from 1,
 * each prev_hash, each recomputed hash, the signed checkpoints (database and file) and the
 * stored head. Reports the first broken seq; for a chain that is whole but disagrees with a
 * checkpoint, that is the first seq after the last checkpoint it still matches.
 */
export async function verifyChain(repo: LedgerRepo, identity: InstallIdentity, checkpointFile: string): Promise<VerifyReport> {
  const expected = new Map<number, Checkpoint>();
  let invalidAt: number | null = null;
  const fromFile = await readCheckpointFile(checkpointFile);
  for (const cp of [...(await repo.checkpoints()), ...fromFile.checkpoints]) {
    const signed = ('key' in cp ? cp.key === identity.fingerprint : true) && identity.verify(checkpointMessage(cp), cp.signature);
    if (!signed) {
      invalidAt = invalidAt === null ? cp.seq : Math.min(invalidAt, cp.seq);
      continue;
    }
    const seen = expected.get(cp.seq);
    if (seen !== undefined && seen.hash !== cp.hash) invalidAt = invalidAt === null ? cp.seq : Math.min(invalidAt, cp.seq);
    expected.set(cp.seq, cp);
  }

  let checked = 0;
  let prev: ChainHead = { seq: 0, hash: GENESIS_HASH };
  // Written inside the row callback, so kept in an object (TypeScript does not track closures).
  const state: { broken: { problem: VerifyProblem; seq: number } | null; matched: Checkpoint | null } = { broken: null, matched: null };
  const fail = (problem: VerifyProblem, seq: number): VerifyReport => ({
    ok: false,
    checked,
    first_bad_seq: seq,
    head: prev,
    checkpoint: state.matched === null ? null : { seq: state.matched.seq, hash: state.matched.hash, at: state.matched.at },
    problem,
  });

  /** Checks one row against the one before; false (and `broken` set) at the first break. */
  const check = (row: StoredEntry): boolean => {
    const seq = Number(row.seq);
    if (seq !== prev.seq + 1) state.broken = { problem: 'seq_gap', seq: prev.seq + 1 };
    else if (row.prev_hash !== prev.hash) state.broken = { problem: 'prev_hash_mismatch', seq };
    else if (entryHash(prev.hash, entryText(row, seq)) !== row.hash) state.broken = { problem: 'hash_mismatch', seq };
    else {
      const cp = expected.get(seq);
      if (cp !== undefined && cp.hash !== row.hash) state.broken = { problem: 'checkpoint_mismatch', seq: (state.matched?.seq ?? 0) + 1 };
      else if (cp !== undefined) state.matched = cp;
    }
    if (state.broken !== null) return false;
    prev = { seq, hash: row.hash };
    checked++;
    return true;
  };

  for (;;) {
    // SQLite answers synchronously: give the event loop a turn between pages so that a long
    // verify never stops the service from answering.
    await new Promise((resolve) => setImmediate(resolve));
    const n = await repo.eachAfter(prev.seq, PAGE, check);
    if (state.broken !== null) return fail(state.broken.problem, state.broken.seq);
    if (n < PAGE) break;
  }

  const beyond = [...expected.keys()].filter((seq) => seq > prev.seq);
  if (beyond.length > 0) return fail('truncated', prev.seq + 1);
  const stored = await repo.head();
  if (stored.seq !== prev.seq || stored.hash !== prev.hash) return fail('head_mismatch', Math.min(stored.seq, prev.seq) + 1);
  if (invalidAt !== null || fromFile.unreadable > 0) return fail('checkpoint_invalid', invalidAt ?? 1);
  return { ok: true, checked, first_bad_seq: null, head: prev, checkpoint: state.matched === null ? null : { seq: state.matched.seq, hash: state.matched.hash, at: state.matched.at }, problem: null };
}
