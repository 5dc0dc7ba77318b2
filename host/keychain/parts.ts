import type { RecordEvent } from '../ledger/ledger.service.ts';
import type { Trx } from '../storage/db.ts';

/** What a keychain may carry, in the order a member applies them. */
export const PARTS = ['connectors', 'policy', 'access_policy', 'mail', 'sso', 'estate_overrides', 'packs_settings'] as const;
export type Part = (typeof PARTS)[number];

export const isPart = (p: unknown): p is Part => typeof p === 'string' && (PARTS as readonly string[]).includes(p);

/**
 * One part's settings as the area that owns them hands them over and takes them back. The
 * keychain never touches another area's tables: each area offers this for its part (docs/keychain.md).
 */
export interface CarriedPart {
  /**
   * The part's settings as this install has them, secrets in the clear (held in memory only: the
   * keychain encrypts them under the content key at once). Read in `trx` when given.
   */
  export(trx?: Trx): Promise<unknown>;
  /**
   * Makes this install's settings of the part exactly `data` (what another install's `export`
   * gave), in the caller's transaction, sealing secrets with this install's own key and recording
   * the area's own events as `actor`. Throws an AppError saying why when they cannot be applied
   * here (nothing is then changed). Answers a short summary for the keychain's event.
   */
  apply(trx: Trx, record: RecordEvent, data: unknown, actor: string): Promise<Record<string, unknown>>;
}

export type CarriedParts = Record<Part, CarriedPart>;

/** The actor of every change the keychain makes on an install. */
export const KEYCHAIN_ACTOR = 'keychain';
