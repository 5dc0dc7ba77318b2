import type { Me } from './api.ts';

/**
 * Who is signed in, as `App.svelte` last read it (GET /v1/auth/me, on every page change): one
 * state that every page and the halt switch read, instead of each asking again. `me` is null
 * before it is read, without a session, and when the read failed; `problem` says why a read failed
 * (not on a 401: the person is sent to sign-in with the server's reason).
 */
export const signedIn = $state({
  me: null as Me | null,
  problem: null as string | null,
});
