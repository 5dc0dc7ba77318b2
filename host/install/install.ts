import type { Trx } from '../storage/db.ts';
import type { InstallRow } from './install.repo.ts';

export type { InstallRow } from './install.repo.ts';

/**
 * The install row (one row, id 1) as other areas use it: read it, lock it to serialise an
 * install-wide change (bootstrap, the trial), move the stored mode, note the trial and the admin
 * token. Only `install/install.repo.ts` touches the `install` table; areas take the narrowest
 * `Pick` of this that they need.
 */
export interface Install {
  get(trx?: Trx): Promise<InstallRow | null>;
  lock(trx: Trx): Promise<InstallRow>;
  moveMode(trx: Trx, from: string, to: string): Promise<boolean>;
  markTrialRedeemed(trx: Trx, at: string): Promise<boolean>;
  setAdminTokenHashIfUnset(hash: string): Promise<boolean>;
}
