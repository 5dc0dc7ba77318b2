import type * as Oidc from 'openid-client';

let loading: Promise<typeof Oidc> | null = null;

/**
 * openid-client (and jose under it), loaded when single sign-on is first used rather than at
 * start: an install without it never holds them (docs/performance.md, "Idle memory").
 */
export function openid(): Promise<typeof Oidc> {
  return (loading ??= import('openid-client'));
}
