import type { Db, Trx } from '../storage/db.ts';
import { PeopleRepo } from './people.repo.ts';
import type { Person } from './people.model.ts';
import type { Role } from './principal.ts';

/** What other areas may ask of the people the identity area keeps (only it touches `people`). */
export interface PeopleCount {
  /** How many people there are (the install leaves setup when the first owner exists). */
  count(trx?: Trx): Promise<number>;
}

/** The people of the install, as other areas see them: read only. */
export interface PeopleDirectory extends PeopleCount {
  /** The person with this (lower-case) address, or null. */
  get(email: string, trx?: Trx): Promise<Person | null>;
  /** The earliest-created enabled owner's address, or null. */
  firstOwner(): Promise<string | null>;
  /** The addresses of enabled people with one of these roles, sorted (the daily digest's recipients). */
  withRoles(roles: readonly Role[]): Promise<string[]>;
}

/** The earliest-created enabled owner's address, or null. */
export function firstOwner(list: { email: string; role: string; enabled: boolean; created_at: string }[]): string | null {
  const owners = list.filter((p) => p.role === 'owner' && p.enabled).sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
  return owners[0]?.email ?? null;
}

/**
 * The people store, built before the areas that read it (mail, status) and handed to the
 * identity area, which alone writes it: `repo` is for the identity area only.
 */
export interface People {
  readonly repo: PeopleRepo;
  readonly directory: PeopleDirectory;
}

export function createPeople(db: Db): People {
  const repo = new PeopleRepo(db);
  return {
    repo,
    directory: {
      count: (trx) => repo.count(trx),
      get: (email, trx) => repo.get(email, trx),
      firstOwner: async () => firstOwner(await repo.list()),
      withRoles: async (roles) =>
        (await repo.list())
          .filter((p) => p.enabled && roles.includes(p.role))
          .map((p) => p.email)
          .sort(),
    },
  };
}
