import type { Clock } from '../clock.ts';
import type { RecordEvent } from '../ledger/ledger.service.ts';
import type { Trx } from '../storage/db.ts';
import type { PeopleRepo, PersonChange } from './people.repo.ts';
import type { Person } from './people.model.ts';
import type { Role } from './principal.ts';
import type { SessionService } from './session.service.ts';

/** What a person's directory groups (or a provider's group claim) give them; null: no mapped group. */
export interface DirectoryGrant {
  role: Role;
  teams: string[];
  tags: string[];
}

/**
 * Someone the directory or the identity provider vouches for. `grant` `keep`: the provider says
 * nothing of groups while the directory sync manages them, so a directory person comes in as
 * the sync last left them (and nobody new comes in).
 */
export interface Entrant {
  email: string;
  name: string;
  grant: DirectoryGrant | null | 'keep';
}

export type Admission = { ok: true; person: Person } | { ok: false; why: 'not_added' | 'disabled' | 'no_mapped_group' };

/** What a sync changed, by address. */
export interface SyncChanges {
  added: string[];
  changed: Array<{ email: string; changes: Record<string, { from: unknown; to: unknown }> }>;
  suspended: string[];
  restored: string[];
  /** Kept as they were because the change would have demoted or suspended the last enabled owner. */
  kept_last_owner: string[];
  /** Hand-added people found in mapped groups: left as they are (they are not the directory's). */
  hand_added: string[];
  sessions_ended: number;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
const sorted = (xs: string[]): string[] => [...xs].sort();

/**
 * People the directory and single sign-on manage: created from their groups, their role, teams
 * and tags following those groups, suspended when they leave every mapped group (or the provider
 * refuses them) and active again when they return. Hand-added people are never taken over. The
 * last enabled owner is never demoted or suspended by a group change: such a change is kept back
 * and reported. Every change ends the person's sessions when their role changes or they are
 * suspended, in the caller's transaction; the caller records the event.
 */
export class DirectoryPeople {
  readonly #people: PeopleRepo;
  readonly #sessions: SessionService;
  readonly #clock: Clock;

  constructor(deps: { people: PeopleRepo; sessions: SessionService; clock: Clock }) {
    this.#people = deps.people;
    this.#sessions = deps.sessions;
    this.#clock = deps.clock;
  }

  /**
   * At a sign-in through the directory or the provider: a hand-added person as they are (if
   * enabled); a directory person brought in step with their groups (and restored if the
   * directory or the provider had suspended them); someone new created from their groups.
   */
  async admit(trx: Trx, record: RecordEvent, who: Entrant, actor: string): Promise<Admission> {
    const now = this.#clock.now().toISOString();
    const existing = await this.#people.lock(trx, who.email);
    if (existing !== null && !existing.directory) return existing.enabled ? { ok: true, person: existing } : { ok: false, why: 'disabled' };
    if (who.grant === 'keep') {
      if (existing === null) return { ok: false, why: 'not_added' };
      return existing.enabled ? { ok: true, person: existing } : { ok: false, why: existing.suspended === null ? 'disabled' : 'no_mapped_group' };
    }
    if (who.grant === null) return { ok: false, why: existing === null ? 'not_added' : 'no_mapped_group' };
    if (existing === null) {
      const person = this.#newPerson(who, who.grant, now);
      await this.#people.insert(trx, person);
      await record({
        type: 'identity.person_added',
        actor,
        reason: `${who.email} added from the directory as ${person.role}`,
        data: { email: who.email, name: person.name, role: person.role, teams: person.teams, tags: person.tags, directory: true },
      });
      return { ok: true, person };
    }
    if (!existing.enabled && existing.suspended === null) return { ok: false, why: 'disabled' };
    const owners = new Set(await this.#people.enabledOwners(trx));
    const { person, changes, ended } = await this.#follow(trx, existing, who, who.grant, owners, now);
    if (Object.keys(changes).length > 0) {
      await record({
        type: 'identity.person_changed',
        actor,
        reason: `${who.email}: ${Object.keys(changes).join(', ')} changed by the directory`,
        data: { email: who.email, changes, sessions_ended: ended },
      });
    }
    return { ok: true, person };
  }

  /**
   * Brings every directory person in step with `members` (everyone in a mapped group, by
   * address): adds, changes, restores, and suspends those no longer in any mapped group.
   * Runs in the caller's transaction; answers what changed for the caller's one event.
   */
  async sync(trx: Trx, members: ReadonlyMap<string, { name: string; grant: DirectoryGrant }>): Promise<SyncChanges> {
    const now = this.#clock.now().toISOString();
    const out: SyncChanges = { added: [], changed: [], suspended: [], restored: [], kept_last_owner: [], hand_added: [], sessions_ended: 0 };
    const owners = new Set(await this.#people.enabledOwners(trx));
    const everyone = new Map((await this.#people.list(trx)).map((p) => [p.email, p]));
    for (const [email, m] of [...members].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const known = everyone.get(email);
      if (known === undefined) {
        const person = this.#newPerson({ email, name: m.name }, m.grant, now);
        await this.#people.insert(trx, person);
        if (person.role === 'owner') owners.add(email);
        out.added.push(email);
        continue;
      }
      if (!known.directory) {
        out.hand_added.push(email);
        continue;
      }
      const existing = (await this.#people.lock(trx, email)) ?? known;
      const before = existing.suspended;
      const { changes, ended, kept } = await this.#follow(trx, existing, { email, name: m.name }, m.grant, owners, now);
      out.sessions_ended += ended;
      if (kept) out.kept_last_owner.push(email);
      if (before !== null && changes.enabled !== undefined) out.restored.push(email);
      const { enabled: _restored, suspended: _s, ...rest } = changes;
      if (Object.keys(rest).length > 0) out.changed.push({ email, changes: rest });
    }
    for (const p of everyone.values()) {
      if (!p.directory || members.has(p.email) || !p.enabled) continue;
      if (p.role === 'owner' && owners.size <= 1 && owners.has(p.email)) {
        out.kept_last_owner.push(p.email);
        continue;
      }
      await this.#people.update(trx, p.email, { enabled: false, suspended: 'directory', updated_at: now });
      owners.delete(p.email);
      out.sessions_ended += await this.#sessions.endFor(trx, p.email, 'directory');
      out.suspended.push(p.email);
    }
    return out;
  }

  /** The provider refused a person at a recheck: suspended, sessions ended (never the last owner). */
  async suspendByProvider(trx: Trx, email: string): Promise<{ suspended: boolean; sessions_ended: number; last_owner: boolean }> {
    const p = await this.#people.lock(trx, email);
    if (p === null || !p.enabled) return { suspended: false, sessions_ended: 0, last_owner: false };
    if (p.role === 'owner' && (await this.#people.enabledOwners(trx)).filter((o) => o !== email).length === 0) {
      return { suspended: false, sessions_ended: 0, last_owner: true };
    }
    await this.#people.update(trx, email, { enabled: false, suspended: 'provider', updated_at: this.#clock.now().toISOString() });
    return { suspended: true, sessions_ended: await this.#sessions.endFor(trx, email, 'provider_refused'), last_owner: false };
  }

  #newPerson(who: Pick<Entrant, 'email' | 'name'>, grant: DirectoryGrant, now: string): Person {
    return {
      email: who.email,
      name: who.name.trim() || who.email,
      role: grant.role,
      teams: sorted(grant.teams),
      tags: sorted(grant.tags),
      enabled: true,
      directory: true,
      suspended: null,
      password_set: false,
      password_expires_at: null,
      created_at: now,
      updated_at: now,
    };
  }

  /** Role, teams, tags and name from the groups; a suspension lifted; the last owner kept an owner. */
  async #follow(
    trx: Trx,
    existing: Person,
    who: Pick<Entrant, 'email' | 'name'>,
    grant: DirectoryGrant,
    owners: Set<string>,
    now: string,
  ): Promise<{ person: Person; changes: Record<string, { from: unknown; to: unknown }>; ended: number; kept: boolean }> {
    const want: Pick<Person, 'name' | 'role' | 'teams' | 'tags'> = {
      name: who.name.trim() || existing.name,
      role: grant.role,
      teams: sorted(grant.teams),
      tags: sorted(grant.tags),
    };
    let kept = false;
    if (existing.role === 'owner' && want.role !== 'owner' && existing.enabled && owners.has(existing.email) && owners.size <= 1) {
      want.role = 'owner';
      kept = true;
    }
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    const change: PersonChange = { updated_at: now };
    for (const k of ['name', 'role', 'teams', 'tags'] as const) {
      if (!same(existing[k], want[k])) {
        changes[k] = { from: existing[k], to: want[k] };
        Object.assign(change, { [k]: want[k] });
      }
    }
    if (existing.suspended !== null) {
      changes.enabled = { from: false, to: true };
      change.enabled = true;
      change.suspended = null;
    }
    if (Object.keys(changes).length === 0) return { person: existing, changes, ended: 0, kept };
    await this.#people.update(trx, existing.email, change);
    const after: Person = {
      ...existing,
      ...want,
      enabled: change.enabled ?? existing.enabled,
      suspended: change.suspended === null ? null : existing.suspended,
      updated_at: now,
    };
    if (after.enabled && after.role === 'owner') owners.add(after.email);
    else owners.delete(after.email);
    const ended = changes.role !== undefined ? await this.#sessions.endFor(trx, existing.email, 'role_changed') : 0;
    return { person: after, changes, ended, kept };
  }
}
