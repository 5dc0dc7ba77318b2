/**
 * History routing over a few paths. The host answers any extensionless path a browser navigates
 * to with index.html, so a reload or a bookmarked deep link lands on the right page.
 */

export type Path = '/' | '/setup' | '/sign-in';
const KNOWN: readonly string[] = ['/', '/setup', '/sign-in'];

function read(): string {
  return location.pathname;
}

const state = $state({ path: read(), reason: null as string | null });

addEventListener('popstate', () => {
  state.path = read();
  state.reason = null;
});

export const router = {
  get path(): string {
    return state.path;
  },
  /** Why the person was sent here (a session that ended), shown once on the sign-in page. */
  get reason(): string | null {
    return state.reason;
  },
  known(path: string): boolean {
    return KNOWN.includes(path);
  },
  go(path: Path, opts: { replace?: boolean; reason?: string } = {}): void {
    if (path !== state.path) {
      if (opts.replace) history.replaceState(null, '', path);
      else history.pushState(null, '', path);
    }
    state.path = path;
    state.reason = opts.reason ?? null;
  },
};
