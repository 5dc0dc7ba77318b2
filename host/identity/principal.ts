/** Who is calling: the roles, the two kinds of principal, and what checks a session token. */

export type Role = 'owner' | 'admin' | 'viewer';

/** Who is calling, as far as the API is concerned. */
export type Principal = AdminPrincipal | SessionPrincipal;
export interface AdminPrincipal {
  kind: 'admin_token';
  actor: 'admin-token';
  role: 'owner';
  email: null;
}
export interface SessionPrincipal {
  kind: 'session';
  /** The person's e-mail; `admin-token` for a break-glass session. */
  actor: string;
  role: Role;
  /** null for a break-glass session of the admin token. */
  email: string | null;
  /** Names the session (for logout) without being the token. */
  tokenHash: string;
  breakGlass: boolean;
  /** The person as the session check read them (null for break-glass). */
  profile: { name: string; teams: string[]; tags: string[] } | null;
}

/** Turns a bearer token into a session principal; null when it names no session; throws
 * `unauthorized` with the reason when the session it names has ended. */
export interface SessionAuthenticator {
  authenticate(token: string): Promise<SessionPrincipal | null>;
}
