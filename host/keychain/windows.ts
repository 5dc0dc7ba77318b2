import { DAY, MINUTE, SECOND } from '../clock.ts';

/** The keychain's times (interface: Limits), all read on the injected clock. */
export const WINDOWS = {
  /** A site key pairs an install within this long of its creation. */
  pairingMs: 10 * MINUTE,
  /** A member not heard from for this long is `not_answering`. */
  notAnsweringMs: 3 * MINUTE,
  /** ... and after this long `gone` (listed until an owner removes it; nothing is removed by itself). */
  goneMs: DAY,
  /** A member that has not reached its home for this long may take over. */
  homeLostMs: 15 * MINUTE,
  /** Members poll the home this often; a home that took over retries its notices as often. */
  pollMs: 30 * SECOND,
  /** Messages between installs dated further than this from the receiver's clock are refused. */
  skewMs: 5 * MINUTE,
} as const;
