import { DAY, type Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Principal, Role } from './principal.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import { generatePassword, hashPassword } from './password.ts';
import type { PeopleRepo, PersonChange } from './people.repo.ts';
import type { Person } from './people.model.ts';
import type { AccessCheck, SessionService } from './session.service.ts';

export interface NewPerson {
  email: string;
  name: string;
  role: Role;
  teams?: string[];
  tags?: string[];
}

export type PersonPatch = Partial<Pick<Person, 'name' | 'role' | 'teams' | 'tags' | 'enabled'>>;

export const PASSWORD_ENDS = { '7d': 7 * DAY, '30d': 30 * DAY, '90d': 90 * DAY, none: null } as const;
export type PasswordEnd = keyof typeof PASSWORD_ENDS;

const RANK: Record<Role, number> = { viewer: 1, admin: 2, owner: 3 };

/**
 * People and their roles. Admins manage viewers and admins; only an owner adds, changes or
 * makes an owner, and gives or removes a password. The last enabled owner can never be demoted
 * or disabled. Every change is a ledger event under the caller (a person's e-mail, or
 * `admin-token`), and a role change or a disabling ends that person's sessions at once.
 */
export class PeopleService {
  readonly #people: PeopleRepo;
  readonly #sessions: SessionService;
  readonly #access: AccessCheck;
  readonly #ledger: Ledger;
  readonly #clock: Clock;

  constructor(deps: { people: PeopleRepo; sessions: SessionService; access: AccessCheck; ledger: Ledger; clock: Clock }) {
    this.#people = deps.people;
    this.#sessions = deps.sessions;
    this.#access = deps.access;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
  }

  list(): Promise<Person[]> {
    return this.#people.list();
  }

  async get(email: string): Promise<Person> {
    const p = await this.#people.get(email.trim().toLowerCase());
    if (p === null) throw new AppError('not_found', 'no such person');
    return p;
  }

  async add(input: NewPerson, by: Principal): Promise<Person> {
    need(by, 'admin');
    if (input.role === 'owner') need(by, 'owner', 'only an owner adds an owner');
    const email = input.email.trim().toLowerCase();
    if (!(await this.#access.allows(email))) throw new AppError('not_allowed_by_policy', 'the access policy does not admit this address');
    const now = this.#clock.now().toISOString();
    const person: Person = {
      email,
      name: input.name.trim(),
      role: input.role,
      teams: input.teams ?? [],
      tags: input.tags ?? [],
      enabled: true,
      directory: false,
      suspended: null,
      password_set: false,
      password_expires_at: null,
      created_at: now,
      updated_at: now,
    };
    await this.#ledger.transact(
      async (trx, record) => {
        if ((await this.#people.lock(trx, email)) !== null) throw new AppError('person_exists', 'someone with this address exists already');
        await this.#people.insert(trx, person);
        await record({
          type: 'identity.person_added',
          actor: by.actor,
          reason: `${email} added as ${person.role}`,
          data: { email, name: person.name, role: person.role, teams: person.teams, tags: person.tags },
        });
      },
      { headFirst: true },
    );
    return person;
  }

  async change(emailIn: string, patch: PersonPatch, by: Principal): Promise<Person> {
    need(by, 'admin');
    const email = emailIn.trim().toLowerCase();
    const now = this.#clock.now().toISOString();
    return this.#ledger.transact(
      async (trx, record) => {
        const before = await this.#people.lock(trx, email);
        if (before === null) throw new AppError('not_found', 'no such person');
        if (before.role === 'owner' || patch.role === 'owner') need(by, 'owner', 'only an owner changes an owner or makes one');
        if (before.directory && (patch.role !== undefined || patch.teams !== undefined || patch.tags !== undefined)) {
          throw new AppError('directory_managed', 'role, teams and tags of a directory person follow the directory groups');
        }
        const changes: Record<string, { from: unknown; to: unknown }> = {};
        for (const k of ['name', 'role', 'teams', 'tags', 'enabled'] as const) {
          if (patch[k] !== undefined && JSON.stringify(patch[k]) !== JSON.stringify(before[k])) changes[k] = { from: before[k], to: patch[k] };
        }
        const after: Person = { ...before, ...patch, updated_at: now };
        if (Object.keys(changes).length === 0) return before;
        const losesOwner = before.role === 'owner' && before.enabled && (after.role !== 'owner' || !after.enabled);
        if (losesOwner && (await this.#people.enabledOwners(trx)).filter((o) => o !== email).length === 0) {
          throw new AppError('last_owner', 'the last owner can never be demoted or disabled');
        }
        const change: PersonChange = { updated_at: now };
        for (const k of Object.keys(changes) as (keyof PersonPatch)[]) Object.assign(change, { [k]: after[k] });
        // Enabling or disabling by hand overrides a suspension by the directory or the provider.
        if (changes.enabled !== undefined) {
          change.suspended = null;
          after.suspended = null;
        }
        await this.#people.update(trx, email, change);
        const reason = changes.enabled !== undefined && !after.enabled ? 'disabled' : changes.role !== undefined ? 'role_changed' : null;
        const ended = reason === null ? 0 : await this.#sessions.endFor(trx, email, reason);
        await record({
          type: 'identity.person_changed',
          actor: by.actor,
          reason: `${email}: ${Object.keys(changes).join(', ')} changed`,
          data: { email, changes, sessions_ended: ended },
        });
        return after;
      },
      { headFirst: true },
    );
  }

  /** Gives (or replaces) a person's password; answers it this once. */
  async setPassword(emailIn: string, ends: PasswordEnd, by: Principal): Promise<{ password: string; expires_at: string | null }> {
    need(by, 'owner', 'only an owner gives a password');
    const email = emailIn.trim().toLowerCase();
    const target = await this.get(email);
    if (target.role === 'owner' || target.directory) throw new AppError('password_not_allowed', 'owners and directory people sign in otherwise');
    const password = generatePassword();
    const hash = await hashPassword(password);
    const now = this.#clock.now();
    const span = PASSWORD_ENDS[ends];
    const expires_at = span === null ? null : new Date(now.getTime() + span).toISOString();
    await this.#ledger.transact(
      async (trx, record) => {
        const current = await this.#people.lock(trx, email);
        if (current === null) throw new AppError('not_found', 'no such person');
        if (current.role === 'owner' || current.directory) throw new AppError('password_not_allowed', 'owners and directory people sign in otherwise');
        await this.#people.setPassword(trx, email, { hash, set_at: now.toISOString(), expires_at }, now.toISOString());
        // Sessions opened with the password it replaces end with it.
        const ended = await this.#sessions.endFor(trx, email, 'password_removed', 'password');
        await record({
          type: 'identity.password_set',
          actor: by.actor,
          reason: `password given to ${email}`,
          data: { email, expires_at, sessions_ended: ended },
        });
      },
      { headFirst: true },
    );
    return { password, expires_at };
  }

  async removePassword(emailIn: string, by: Principal): Promise<void> {
    need(by, 'owner', 'only an owner removes a password');
    const email = emailIn.trim().toLowerCase();
    const now = this.#clock.now().toISOString();
    await this.#ledger.transact(
      async (trx, record) => {
        const current = await this.#people.lock(trx, email);
        if (current === null) throw new AppError('not_found', 'no such person');
        if (!current.password_set) throw new AppError('not_found', 'this person has no password');
        await this.#people.setPassword(trx, email, null, now);
        const ended = await this.#sessions.endFor(trx, email, 'password_removed', 'password');
        await record({ type: 'identity.password_removed', actor: by.actor, reason: `password of ${email} removed`, data: { email, sessions_ended: ended } });
      },
      { headFirst: true },
    );
  }
}

function need(by: Principal, role: Role, why?: string): void {
  if (RANK[by.role] < RANK[role]) throw new AppError('forbidden', why ?? `needs the ${role} role`);
}
