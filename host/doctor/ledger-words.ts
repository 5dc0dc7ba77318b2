import type { VerifyProblem, VerifyReport } from '../ledger/verify.ts';

/** Why a chain failed verification, in words. */
export const LEDGER_PROBLEMS: Record<VerifyProblem, string> = {
  seq_gap: 'an event is missing from the chain',
  prev_hash_mismatch: 'an event does not link to the one before it',
  hash_mismatch: 'an event was changed after it was written',
  head_mismatch: 'the stored chain head does not match the last event',
  checkpoint_mismatch: 'the chain no longer matches a signed checkpoint',
  truncated: 'events a signed checkpoint (or the expected seq) vouches for are missing',
  checkpoint_invalid: 'a checkpoint is not signed by this install or its file has unreadable lines',
  checkpoint_missing: 'signed checkpoints the service writes are missing (removed from the database and the checkpoint file)',
  expected_hash_mismatch: 'the entry at the expected seq no longer has the expected hash',
};

/** One line about a verify report, shared by doctor and `oncall ledger-verify`. */
export function describeLedger(r: VerifyReport): string {
  if (r.ok) {
    const cp = r.checkpoint === null ? 'no signed checkpoint yet' : `matches the signed checkpoint at seq ${r.checkpoint.seq} (${r.checkpoint.at})`;
    return `chain verified: ${r.checked} events, head seq ${r.head.seq}; ${cp}`;
  }
  const why = r.problem === null ? 'unknown problem' : `${LEDGER_PROBLEMS[r.problem]} (${r.problem})`;
  if (r.problem === 'checkpoint_missing' && r.range !== null) {
    return `no signed checkpoint in seqs ${r.range.from_seq} to ${r.range.to_seq}: ${why}; a rewrite there would go unseen, so check the chain against a head kept elsewhere (docs/ledger.md)`;
  }
  // A self-consistent chain that disagrees at one seq was rewritten somewhere up to that seq,
  // after the last checkpoint it still matches; the entries before it hash correctly, which
  // says nothing about whether they are the original ones.
  if (r.problem === 'checkpoint_mismatch' || r.problem === 'expected_hash_mismatch') {
    return `chain rewritten between seq ${r.first_bad_seq} and seq ${r.checked + 1}: ${why}`;
  }
  return `chain broken at seq ${r.first_bad_seq}: ${why}; ${r.checked} events before it are intact`;
}
