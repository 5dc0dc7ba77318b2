export interface Lease {
  name: string;
  holder: string;
  until_ms: number;
}

/**
 * What the schedule area offers the others that take leases of their own (the study, single
 * sign-on's sync): one conditional statement takes or extends a lease, so one host process holds
 * it at a time. `LeaseRepo` is the one implementation; areas depend on this shape.
 */
export interface Leases {
  /** Takes `name` for `holder` until `nowMs + ttlMs` when free, expired or already the holder's. */
  take(name: string, holder: string, ttlMs: number, nowMs: number): Promise<boolean>;
  /** Gives a lease back early (only the holder can). */
  release(name: string, holder: string): Promise<void>;
  /** Gives back every lease these holders hold (null: every holder's); how many. */
  releaseAll(holders: readonly string[] | null): Promise<number>;
  /** The names of the leases these holders hold at `nowMs`. */
  heldBy(holders: readonly string[], nowMs: number): Promise<string[]>;
  /** Every lease live at `nowMs`. */
  live(nowMs: number): Promise<Lease[]>;
  get(name: string): Promise<Lease | null>;
}
