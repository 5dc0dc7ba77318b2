import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Principal } from './principal.ts';
import type { Ledger, RecordEvent } from '../ledger/ledger.service.ts';
import { checkVersion, Revisions, type Revision } from '../settings/revisions.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { UnitOfWork } from '../storage/unit-of-work.ts';
import type { Trx } from '../storage/db.ts';
import {
  compilePolicy,
  initialPolicy,
  OPEN_POLICY,
  parsePolicy,
  PolicyError,
  refusalText,
  type AccessPolicy,
  type CompiledPolicy,
  type Refusal,
} from './access-policy.ts';
import type { PeopleRepo } from './people.repo.ts';

/** The settings row the policy lives in. */
export const ACCESS_SETTING = 'access';

/** How long `allows` trusts the policy it last read, in real time (a change made here is seen at once). */
export const ACCESS_CACHE_MS = 1000;

/**
 * Ends open sessions of people the new policy no longer admits, inside the policy change's
 * transaction; answers how many it ended. Implemented by the sessions area.
 */
export interface SessionEnder {
  endOutside(trx: Trx, allows: (email: string) => boolean, atMs: number): Promise<number>;
}

export interface AccessPolicyDeps {
  settings: SettingsStore;
  work: UnitOfWork;
  people: PeopleRepo;
  ledger: Ledger;
  clock: Clock;
  sessions: SessionEnder;
}

/**
 * The access policy in force: stored in settings row `access`, changed only through `put`
 * (recorded as `identity.access_changed`), applied by `allows`/`check` when a person is added,
 * when a code is asked for and checked, and on every request of an open session. While no row
 * exists the policy is OPEN_POLICY (any domain; disposable domains still refused).
 */
export class AccessPolicyService {
  readonly #settings: SettingsStore;
  readonly #people: PeopleRepo;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #sessions: SessionEnder;
  readonly #work: UnitOfWork;
  /** The compiled policy and when it was read, in real time (performance.now()) and service time. */
  #cache: { compiled: CompiledPolicy; real: number; at: number } | null = null;
  /** Bumped by every local change, so a read that started before it does not fill the cache. */
  #generation = 0;
  readonly #revisions: Revisions;

  constructor(deps: AccessPolicyDeps) {
    this.#settings = deps.settings;
    this.#people = deps.people;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
    this.#sessions = deps.sessions;
    this.#work = deps.work;
    this.#revisions = new Revisions(deps.settings);
  }

  /** The policy in force with its version and who last changed it: what GET answers. */
  async view(): Promise<AccessPolicy & Revision> {
    return this.#work.run(async (trx) => ({ ...(await this.#read(trx)), ...(await this.#revisions.get(ACCESS_SETTING, trx)) }));
  }

  /** The policy in force, read from storage (not from the cache). */
  async get(trx?: Trx): Promise<AccessPolicy> {
    return this.#read(trx);
  }

  /**
   * Replaces the policy. 400 `invalid_body` when it is not valid; 409 `would_lock_out_owners`
   * when no enabled owner would be admitted (so also before the first owner exists: bootstrap
   * sets the starting policy). Ends the open sessions of people it shuts out, in the same
   * transaction, and records `identity.access_changed` with the policy before and after.
   * `expectedVersion` (the version the caller read) other than the stored one: 409
   * `version_conflict`. A policy equal to the one in force changes nothing (no event, same version).
   */
  async put(input: AccessPolicy, principal: Principal, expectedVersion: number | null = null): Promise<AccessPolicy> {
    let next: AccessPolicy;
    try {
      next = parsePolicy(input);
    } catch (e) {
      if (e instanceof PolicyError) throw new AppError('invalid_body', e.message);
      throw e;
    }
    const compiled = compilePolicy(next);
    const now = this.#clock.now();
    this.#invalidate();
    try {
      await this.#ledger.transact(
        async (trx, record) => {
          checkVersion(expectedVersion, (await this.#revisions.get(ACCESS_SETTING, trx)).version, 'the access policy');
          const before = await this.#readOrNull(trx);
          if (before !== null && samePolicy(before, next)) return;
          const owners = await this.#people.enabledOwners(trx);
          if (owners.length === 0)
            throw new AppError('would_lock_out_owners', 'there is no enabled owner yet: the first owner is created with a starting policy');
          if (!owners.some((o) => compiled.admits(o))) throw new AppError('would_lock_out_owners', 'this policy would shut out every enabled owner');
          await this.#settings.put(trx, ACCESS_SETTING, next, now.toISOString());
          await this.#revisions.bump(trx, ACCESS_SETTING, principal.actor, now.toISOString());
          const ended = await this.#sessions.endOutside(trx, compiled.admits, now.getTime());
          await record({
            type: 'identity.access_changed',
            actor: principal.actor,
            reason: 'access policy changed',
            data: { before, after: next, sessions_ended: ended },
          });
          // The chain head first, as every change of people takes it: the owners' rows are locked
          // after it in both, so a policy change and an owner's demotion cannot deadlock on MySQL.
        },
        { headFirst: true },
      );
    } finally {
      this.#invalidate();
    }
    return next;
  }

  /** The policy in force as the keychain carries it (docs/keychain.md). */
  async exportCarried(trx?: Trx): Promise<{ access: AccessPolicy }> {
    return { access: await this.#read(trx) };
  }

  /**
   * Makes the policy the carried one, in the keychain's transaction, as `put` would: refused (409
   * `would_lock_out_owners`) when it would shut out every enabled owner of this install; ends the
   * sessions of people it shuts out; records `identity.access_changed` by `actor`.
   */
  async applyCarried(trx: Trx, record: RecordEvent, data: unknown, actor: string): Promise<Record<string, unknown>> {
    let next: AccessPolicy;
    try {
      next = parsePolicy(data !== null && typeof data === 'object' ? (data as { access?: unknown }).access : undefined);
    } catch (e) {
      if (e instanceof PolicyError) throw new AppError('invalid_body', e.message);
      throw e;
    }
    const before = await this.#readOrNull(trx);
    if (before !== null && samePolicy(before, next)) return { changed: false };
    const compiled = compilePolicy(next);
    const owners = await this.#people.enabledOwners(trx);
    if (!owners.some((o) => compiled.admits(o))) throw new AppError('would_lock_out_owners', 'this policy would shut out every enabled owner of this install');
    const now = this.#clock.now();
    this.#invalidate();
    await this.#settings.put(trx, ACCESS_SETTING, next, now.toISOString());
    await this.#revisions.bump(trx, ACCESS_SETTING, actor, now.toISOString());
    const ended = await this.#sessions.endOutside(trx, compiled.admits, now.getTime());
    await record({
      type: 'identity.access_changed',
      actor,
      reason: 'access policy carried by the keychain',
      data: { before, after: next, sessions_ended: ended, via: 'keychain' },
    });
    this.#afterCommit(trx);
    return { changed: true, sessions_ended: ended };
  }

  /** The cache may be filled from storage before `trx` commits: drop it again once it has. */
  #afterCommit(trx: Trx): void {
    const done = (trx as { executionPromise?: Promise<unknown> }).executionPromise;
    if (done !== undefined)
      done.then(
        () => this.#invalidate(),
        () => this.#invalidate(),
      );
  }

  /** Whether the policy in force admits `email`. Cached (see ACCESS_CACHE_MS) unless given a transaction. */
  async allows(email: string, trx?: Trx): Promise<boolean> {
    return (await this.refusal(email, trx)) === null;
  }

  /** Why the policy refuses `email`, or null when it admits it. */
  async refusal(email: string, trx?: Trx): Promise<Refusal | null> {
    const compiled = trx === undefined ? await this.#compiled() : await this.#compiledIn(trx);
    const r = compiled.check(email);
    return r.allowed ? null : r.reason;
  }

  /** Throws 400 `not_allowed_by_policy`, saying why, unless the policy admits `email`. */
  async check(email: string, trx?: Trx): Promise<void> {
    const reason = await this.refusal(email, trx);
    if (reason !== null) throw new AppError('not_allowed_by_policy', refusalText(reason));
  }

  /**
   * The starting policy, written by bootstrap in its transaction: the first owner's domain
   * allowed unless it is public webmail (then no domain restriction); nothing blocked; webmail
   * not blocked. Replaces any stored row. Throws 400 `not_allowed_by_policy` when the owner
   * could not sign in under it (a disposable-mail or invalid address). Answers the policy
   * written, for the caller's event.
   */
  async initialise(trx: Trx, ownerEmail: string, at: string | Date): Promise<AccessPolicy> {
    const policy = initialPolicy(ownerEmail);
    const r = compilePolicy(policy).check(ownerEmail);
    if (!r.allowed) throw new AppError('not_allowed_by_policy', refusalText(r.reason));
    this.#invalidate();
    await this.#settings.put(trx, ACCESS_SETTING, policy, typeof at === 'string' ? at : at.toISOString());
    this.#afterCommit(trx);
    return policy;
  }

  /** Cached for ACCESS_CACHE_MS of real time and of service time both (as the guard's mode). */
  async #compiled(): Promise<CompiledPolicy> {
    const c = this.#cache;
    const real = performance.now();
    const at = this.#clock.now().getTime();
    if (c !== null && real - c.real < ACCESS_CACHE_MS && at >= c.at && at - c.at < ACCESS_CACHE_MS) return c.compiled;
    const generation = this.#generation;
    const compiled = await this.#compiledIn();
    if (generation === this.#generation) this.#cache = { compiled, real, at };
    return compiled;
  }

  async #compiledIn(trx?: Trx): Promise<CompiledPolicy> {
    return compilePolicy(await this.#read(trx));
  }

  /** The stored policy; an unreadable row fails (500, logged): nobody is admitted until an admin saves a policy again. */
  async #read(trx?: Trx): Promise<AccessPolicy> {
    const policy = await this.#readOrNull(trx);
    if (policy === null) throw new Error(`the stored ${ACCESS_SETTING} setting is not a valid access policy`);
    return policy;
  }

  /** The stored policy, OPEN_POLICY when none is stored, null when the row is not a valid policy. */
  async #readOrNull(trx?: Trx): Promise<AccessPolicy | null> {
    let stored: unknown;
    try {
      stored = await this.#settings.get<unknown>(ACCESS_SETTING, trx);
    } catch (e) {
      if (e instanceof SyntaxError) return null;
      throw e;
    }
    if (stored === null) return { allowed_domains: [], blocked: [], block_webmail: OPEN_POLICY.block_webmail };
    try {
      return parsePolicy(stored);
    } catch (e) {
      if (e instanceof PolicyError) return null;
      throw e;
    }
  }

  #invalidate(): void {
    this.#generation++;
    this.#cache = null;
  }
}

/** Whether two policies admit the same people (list order does not count). */
function samePolicy(a: AccessPolicy, b: AccessPolicy): boolean {
  const same = (x: string[], y: string[]) => x.length === y.length && [...x].sort().join('\n') === [...y].sort().join('\n');
  return a.block_webmail === b.block_webmail && same(a.allowed_domains, b.allowed_domains) && same(a.blocked, b.blocked);
}
