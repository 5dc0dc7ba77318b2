/** The witness component of doctor: whether each configured ledger witness has the latest checkpoint. */
import { part, plural, type Part } from '../part.ts';

/** What doctor reads of the ledger's witnesses (Witness.status() fits as it is). */
export type WitnessSeen = Array<{ target: string; delivered_seq: number | null; failing: boolean }>;

export function describeWitness(seen: WitnessSeen): Part {
  if (seen.length === 0) return part('ok', 'no ledger witness configured (SERVICE_LEDGER_WITNESS)');
  const failing = seen.filter((w) => w.failing);
  if (failing.length > 0)
    return part(
      'warn',
      `checkpoints not delivered to ${failing.map((w) => `${w.target} (last delivered ${w.delivered_seq === null || w.delivered_seq === 0 ? 'none' : `seq ${w.delivered_seq}`})`).join(', ')}; each tick tries again with the latest`,
      'check that the witness runs and this host reaches it (SERVICE_LEDGER_WITNESS, docs/ledger.md)',
    );
  const pending = seen.filter((w) => w.delivered_seq === null);
  if (pending.length === seen.length) return part('ok', `${plural(seen.length, 'witness', 'witnesses')} configured; no checkpoint sent yet by this host`);
  return part('ok', `${plural(seen.length, 'witness', 'witnesses')}, each with the latest checkpoint this host sent`);
}
