/**
 * Where a person goes back to after signing in, and the single sign-on's landing. A page that
 * needs a session sends the person to sign-in and remembers where they were (per tab); any way
 * of signing in goes back there. Single sign-on ends at `/?sso=<ticket>` (or `/?sso_error=<why>`):
 * read once when the console loads and taken off the address at once, so the ticket stays out of
 * the history.
 */

const KEY = 'oncall.return_to';

/** A path of this console (`/…`), never `//host` or a scheme: anything else becomes `/`. */
export function safePath(path: string | null | undefined): string {
  if (typeof path !== 'string' || !path.startsWith('/') || path.startsWith('//') || path.includes('\\')) return '/';
  return path;
}

export function rememberReturn(path: string): void {
  try {
    sessionStorage.setItem(KEY, safePath(path));
  } catch {
    /* no storage: back to the home page */
  }
}

/** The remembered path (then forgotten), `/` without one. */
export function takeReturn(): string {
  try {
    const p = sessionStorage.getItem(KEY);
    sessionStorage.removeItem(KEY);
    return safePath(p);
  } catch {
    return '/';
  }
}

/** Peeks at the remembered path without forgetting it (single sign-on carries it through the provider). */
export function pendingReturn(): string {
  try {
    return safePath(sessionStorage.getItem(KEY));
  } catch {
    return '/';
  }
}

/** Goes to a console path the way in-console links do (the router and the page follow popstate). */
export function goTo(path: string): void {
  history.pushState(null, '', safePath(path));
  dispatchEvent(new PopStateEvent('popstate'));
}

export const ssoLanding: { ticket: string | null; error: string | null } = (() => {
  const q = new URLSearchParams(location.search);
  const landing = { ticket: q.get('sso'), error: q.get('sso_error') };
  if (landing.ticket !== null || landing.error !== null) history.replaceState(null, '', location.pathname);
  return landing;
})();
