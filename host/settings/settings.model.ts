import type { Trx } from '../storage/db.ts';

/**
 * What the settings area offers the others: named JSON documents (mail, access, ...), each area
 * reading and writing its own name; secrets inside are sealed by that area. `SettingsRepo` is
 * the one implementation; areas depend on this shape, never on the repo.
 */
export interface SettingsStore {
  get<T>(name: string, trx?: Trx): Promise<T | null>;
  /** Writes one document; `trx` null: alone, on the store's own handle (one statement, atomic). */
  put(trx: Trx | null, name: string, value: unknown, at: string): Promise<void>;
}
