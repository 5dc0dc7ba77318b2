import { AppError } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';

/** Who asked for a governance change: the authenticated actor, and the person named. */
export interface Asker {
  /** The ledger actor: the signed-in person's e-mail, or `admin-token`. */
  actor: string;
  /** The person asking: the e-mail for a session; the `by` given with the admin token. */
  by: string;
}

/**
 * A person's session records their e-mail and ignores a supplied `by`. The admin token (and a
 * break-glass session of it, which names nobody) must say who is asking: 400 `by_required`.
 */
export function askerOf(principal: Principal, by: string | undefined): Asker {
  if (principal.kind === 'session' && principal.email !== null) return { actor: principal.email, by: principal.email };
  const named = by?.trim() ?? '';
  if (named.length === 0) throw new AppError('by_required', 'with the admin token, say who is asking in `by`');
  return { actor: principal.actor, by: named };
}
