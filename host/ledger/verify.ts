import type { InstallIdentity } from '../install/identity.ts';
import { CHECKPOINT_EVERY_EVENTS, CHECKPOINT_MAX_GAP, checkpointMessage, readCheckpointFile } from './checkpoints.ts';
import { entryHash, entryText, GENESIS_HASH, type ChainHead, type StoredEntry } from './entry.ts';
import type { LedgerRepo } from './ledger.repo.ts';
import type { Checkpoint } from './ledger.model.ts';

export type VerifyProblem =
  | 'seq_gap'
  | 'prev_hash_mismatch'
  | 'hash_mismatch'
  | 'head_mismatch'
  | 'checkpoint_mismatch'
  | 'truncated'
  | 'checkpoint_invalid'
  | 'checkpoint_missing'
  | 'expected_hash_mismatch';

/** How an entry's hash is written: lower-case hex SHA-256. */
export const HASH_PATTERN = /^[0-9a-f]{64}$/;

/** A head kept elsewhere (an auditor's note, a shipped log line): the entry at `seq` must still have `hash`. */
export interface Expectation {
  seq: number;
  hash: string;
}

export interface VerifyOptions {
  expect?: Expectation;
}

export interface VerifyReport {
  ok: boolean;
  checked: number;
  first_bad_seq: number | null;
  head: ChainHead;
  /** The last checkpoint the chain matched, if any. */
  checkpoint: { seq: number; hash: string; at: string } | null;
  problem: VerifyProblem | null;
  /** With `checkpoint_missing`: the seqs in which no checkpoint lies although one was due there. */
  range: { from_seq: number; to_seq: number } | null;
  /** When an expectation was given: the hash stored at its seq (null: no such entry) and whether it matches. */
  expected: { seq: number; hash: string; found: string | null; matches: boolean } | null;
}

/** Rows per database round trip; small enough that a page never outlives the young generation. */
const PAGE = 1000;

/**
 * Streams the chain in pages (constant memory) and checks, in order: consecutive seqs from 1,
 * each prev_hash, each recomputed hash, the signed checkpoints (database and file), the
 * expectation if one was given, and the stored head; then that checkpoints lie as densely as
 * the service writes them (checkpoints.ts). Reports the first broken seq; for a chain that is
 * whole but disagrees with a checkpoint or the expectation, that is the first seq after the
 * last checkpoint it still matches.
 */
export async function verifyChain(repo: LedgerRepo, identity: InstallIdentity, checkpointFile: string, opts: VerifyOptions = {}): Promise<VerifyReport> {
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
  const expect = opts.expect ?? null;
  const found = expect === null ? null : await repo.hashAt(expect.seq);
  const expectedReport = expect === null ? null : { seq: expect.seq, hash: expect.hash, found, matches: found === expect.hash };

  // The stored head is read before the rows: a running service appends while it verifies, and
  // every row up to this head is committed, so the chain must reach it with its hash. Rows
  // committed after it are checked too; they are not a mismatch.
  const stored = await repo.head();
  let hashAtStored: string | null = stored.seq === 0 ? GENESIS_HASH : null;
  let checked = 0;
  let prev: ChainHead = { seq: 0, hash: GENESIS_HASH };
  // Written inside the row callback, so kept in an object (TypeScript does not track closures).
  const state: {
    broken: { problem: VerifyProblem; seq: number } | null;
    matched: Checkpoint | null;
    /** The first stretch of seqs longer than CHECKPOINT_MAX_GAP without a checkpoint. */
    gap: { from_seq: number; to_seq: number } | null;
  } = { broken: null, matched: null, gap: null };
  const report = (problem: VerifyProblem | null, seq: number | null, range: VerifyReport['range'] = null): VerifyReport => ({
    ok: problem === null,
    checked,
    first_bad_seq: seq,
    head: prev,
    checkpoint: state.matched === null ? null : { seq: state.matched.seq, hash: state.matched.hash, at: state.matched.at },
    problem,
    range,
    expected: expectedReport,
  });
  const afterMatched = () => (state.matched?.seq ?? 0) + 1;

  /** Checks one row against the one before; false (and `broken` set) at the first break. */
  const check = (row: StoredEntry): boolean => {
    const seq = Number(row.seq);
    if (seq !== prev.seq + 1) state.broken = { problem: 'seq_gap', seq: prev.seq + 1 };
    else if (row.prev_hash !== prev.hash) state.broken = { problem: 'prev_hash_mismatch', seq };
    else if (entryHash(prev.hash, entryText(row, seq)) !== row.hash) state.broken = { problem: 'hash_mismatch', seq };
    else if (expect !== null && seq === expect.seq && row.hash !== expect.hash) state.broken = { problem: 'expected_hash_mismatch', seq: afterMatched() };
    else {
      const cp = expected.get(seq);
      if (cp !== undefined && cp.hash !== row.hash) state.broken = { problem: 'checkpoint_mismatch', seq: afterMatched() };
      else if (cp !== undefined) {
        const last = state.matched?.seq ?? 0;
        if (state.gap === null && seq - last > CHECKPOINT_MAX_GAP) state.gap = { from_seq: last + 1, to_seq: seq - 1 };
        state.matched = cp;
      }
    }
    if (state.broken !== null) return false;
    if (seq === stored.seq) hashAtStored = row.hash;
    prev = { seq, hash: row.hash };
    checked++;
    return true;
  };

  for (;;) {
    // SQLite answers synchronously: give the event loop a turn between pages so that a long
    // verify never stops the service from answering.
    await new Promise((resolve) => setImmediate(resolve));
    const n = await repo.eachAfter(prev.seq, PAGE, check);
    if (state.broken !== null) return report(state.broken.problem, state.broken.seq);
    if (n < PAGE) break;
  }

  const beyond = [...expected.keys()].filter((seq) => seq > prev.seq);
  if (beyond.length > 0 || (expect !== null && expect.seq > prev.seq)) return report('truncated', prev.seq + 1);
  if (prev.seq < stored.seq || hashAtStored !== stored.hash) return report('head_mismatch', Math.min(stored.seq, prev.seq) + 1);
  if (invalidAt !== null || fromFile.unreadable > 0) return report('checkpoint_invalid', invalidAt ?? 1);
  const last = state.matched?.seq ?? 0;
  // A chain longer than one checkpoint interval with no checkpoint at all is missing them,
  // whatever the tolerance between two: a squashed history (everything collapsed into fewer
  // than 3,000 re-hashed events, head updated, checkpoints deleted) is just that.
  if (state.gap === null && state.matched === null && prev.seq > CHECKPOINT_EVERY_EVENTS) state.gap = { from_seq: 1, to_seq: prev.seq };
  if (state.gap === null && prev.seq - last > CHECKPOINT_MAX_GAP) state.gap = { from_seq: last + 1, to_seq: prev.seq };
  if (state.gap !== null) return report('checkpoint_missing', state.gap.from_seq, state.gap);
  return report(null, null);
}
