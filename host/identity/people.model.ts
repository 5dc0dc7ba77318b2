import type { Role } from './principal.ts';

export interface Person {
  email: string;
  name: string;
  role: Role;
  teams: string[];
  tags: string[];
  enabled: boolean;
  /** Managed by the directory (role, teams and tags follow its groups). */
  directory: boolean;
  /**
   * Why single sign-on or the directory suspended them (`directory`: in no mapped group;
   * `provider`: the identity provider refused them), null otherwise. A suspended person is not enabled.
   */
  suspended: Suspension | null;
  password_set: boolean;
  password_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export type Suspension = 'directory' | 'provider';
