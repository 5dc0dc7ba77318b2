import { ApiError, failure } from './api.ts';

/**
 * A page's read of the API, the same on every page. `read` takes the answers into the page's
 * state; then `said(null)` clears what the page said went wrong. When it fails:
 * - a 401 is not the page's to show: `api.ts` has sent the person to sign-in with the server's
 *   reason, so the page keeps what it shows;
 * - an error the page `handles` (`not_operating`, a 404, the licence tier...) is the page's own,
 *   which returns true to say it has shown it;
 * - anything else is `said` in words: the server's message, else its code described.
 */
export async function pageRead(read: () => Promise<void>, said: (problem: string | null) => void, handles?: (e: ApiError) => boolean): Promise<void> {
  try {
    await read();
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || handles?.(e) === true)) return;
    return said(failure(e));
  }
  said(null);
}

/** For `handles`: a page available only once the install is operating says so itself (`set`). */
export const whenNotOperating =
  (set: () => void) =>
  (e: ApiError): boolean =>
    e.code === 'not_operating' && (set(), true);
