import { MINUTE, type Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { DirectoryGrant, DirectoryPeople, SyncChanges } from '../identity/directory-people.service.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { Trx } from '../storage/db.ts';
import { clip } from '../text.ts';
import { mappedMembers } from './membership.ts';
import { withDirectory } from './open-directory.ts';
import type { SsoSettingsStore } from './sso-store.ts';

/** The sync's own settings document: its last result. */
export const SYNC_SETTING = 'sso_sync';
/** The lease one host takes to sync (schedule area's LeaseRepo). */
export const SYNC_LEASE = 'directory_sync';

export interface SyncResult extends Partial<SyncChanges> {
  ok: boolean;
  at: string;
  /** Who asked: `system` (every sync_minutes) or a person (sync now). */
  by: string;
  /** Why nothing changed: the directory unreachable, a read cut short, … (null when ok). */
  reason: string | null;
  /** People in mapped groups (after the disabled, those without an address and those the policy refuses are left out). */
  members: number;
  skipped: { disabled: number; no_address: string[]; outside_policy: string[]; same_address: string[] };
  duration_ms: number;
}

export interface SyncDeps {
  store: SsoSettingsStore;
  settings: SettingsStore;
  leases: { take(name: string, holder: string, ttlMs: number, nowMs: number): Promise<boolean>; release(name: string, holder: string): Promise<void> };
  holder: string;
  people: DirectoryPeople;
  /** Whether the access policy admits an address. */
  admits(email: string): Promise<boolean>;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  timeoutMs: number;
}

/**
 * The directory sync: every `sync_minutes`, under a database lease so that one host syncs,
 * people of mapped groups are brought in step (identity's DirectoryPeople), and
 * `identity.directory_synced` is recorded every time, also when the directory cannot be read
 * (with the reason). The whole directory is read before anything changes: a failed or partial
 * read changes nobody.
 */
export class DirectorySync {
  readonly #d: SyncDeps;
  #running: Promise<unknown> | null = null;
  #busy = false;

  constructor(deps: SyncDeps) {
    this.#d = deps;
  }

  async last(trx?: Trx): Promise<SyncResult | null> {
    return this.#d.settings.get<SyncResult>(SYNC_SETTING, trx);
  }

  /** The tick: starts a sync in the background when one is due (not awaited; `idle()` waits). */
  tick(): void {
    if (this.#running !== null) return;
    this.#running = this.#whenDue()
      .catch((err: unknown) => this.#d.log.error({ err }, 'directory sync failed'))
      .finally(() => (this.#running = null));
  }

  /** Resolves once a sync the tick started has ended (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#running !== null) await this.#running;
  }

  async #whenDue(): Promise<void> {
    if (!(await this.#due())) return;
    await this.#underLease('system', true);
  }

  async #due(): Promise<boolean> {
    const s = await this.#d.store.load();
    if (s.ldap === null) return false;
    const last = await this.last();
    return last === null || this.#d.clock.now().getTime() - Date.parse(last.at) >= s.sync_minutes * MINUTE;
  }

  /** POST /v1/settings/sso/sync: now, unless another host or request is syncing (409 `sync_running`). */
  async now(by: string): Promise<SyncResult> {
    if ((await this.#d.store.load()).ldap === null) throw new AppError('directory_not_configured', 'no directory is configured');
    const result = await this.#underLease(by, false);
    if (result === null) throw new AppError('sync_running', 'a sync is running: its result will be under last_sync');
    return result;
  }

  async #underLease(by: string, onlyWhenDue: boolean): Promise<SyncResult | null> {
    const { leases, holder, clock } = this.#d;
    // The lease keeps other hosts out; this flag keeps a second sync of this host out (the lease
    // is this host's already, so taking it again would succeed).
    if (this.#busy) return null;
    this.#busy = true;
    try {
      // Long enough for a slow directory's whole read; released as soon as the sync ends.
      const ttl = this.#d.timeoutMs * 4 + MINUTE;
      if (!(await leases.take(SYNC_LEASE, holder, ttl, clock.now().getTime()))) return null;
      try {
        // Another host may have synced between the check and the lease: the lease decides.
        if (onlyWhenDue && !(await this.#due())) return null;
        return await this.#run(by);
      } finally {
        await leases.release(SYNC_LEASE, holder);
      }
    } finally {
      this.#busy = false;
    }
  }

  async #run(by: string): Promise<SyncResult> {
    const { store, clock, ledger } = this.#d;
    const started = clock.now();
    const s = await store.load();
    const base: SyncResult = {
      ok: false,
      at: started.toISOString(),
      by,
      reason: null,
      members: 0,
      skipped: { disabled: 0, no_address: [], outside_policy: [], same_address: [] },
      duration_ms: 0,
    };
    let members: Map<string, { name: string; grant: DirectoryGrant }>;
    try {
      if (s.ldap === null) throw new Error('no directory is configured');
      const ldap = s.ldap;
      const { people, groups } = await withDirectory(ldap, this.#d.timeoutMs, async (dir) => ({
        people: await dir.allPeople(),
        groups: await dir.allGroups(),
      }));
      members = new Map();
      const byEmail = new Map<string, number>();
      const reached = [...mappedMembers(people, groups, s.mappings).values()];
      for (const { person } of reached) if (person.email !== null) byEmail.set(person.email, (byEmail.get(person.email) ?? 0) + 1);
      for (const { person, granted } of reached) {
        if (person.disabled) base.skipped.disabled++;
        else if (person.email === null) base.skipped.no_address.push(person.dn);
        else if ((byEmail.get(person.email) ?? 0) > 1) {
          if (!base.skipped.same_address.includes(person.email)) base.skipped.same_address.push(person.email);
        } else if (!(await this.#d.admits(person.email))) base.skipped.outside_policy.push(person.email);
        else members.set(person.email, { name: person.name, grant: { role: granted.role, teams: granted.teams, tags: granted.tags } });
      }
    } catch (err) {
      const reason = clip(err instanceof Error ? err.message : String(err), 1000, '…');
      const result: SyncResult = { ...base, reason, duration_ms: clock.now().getTime() - started.getTime() };
      await ledger.transact(async (trx, record) => {
        await this.#d.settings.put(trx, SYNC_SETTING, result, result.at);
        await record({
          type: 'identity.directory_synced',
          actor: by,
          reason: `directory sync failed, nobody changed: ${reason}`,
          data: { ok: false, reason },
        });
      });
      return result;
    }
    return ledger.transact(
      async (trx, record) => {
        const changes = await this.#d.people.sync(trx, members);
        const result: SyncResult = { ...base, ...changes, ok: true, members: members.size, duration_ms: clock.now().getTime() - started.getTime() };
        await this.#d.settings.put(trx, SYNC_SETTING, result, result.at);
        const counts = `${changes.added.length} added, ${changes.changed.length} changed, ${changes.suspended.length} suspended, ${changes.restored.length} active again`;
        await record({
          type: 'identity.directory_synced',
          actor: by,
          reason: `directory synced: ${members.size} people in mapped groups; ${counts}${changes.kept_last_owner.length > 0 ? '; the last owner kept' : ''}`,
          data: { ok: true, members: members.size, ...changes, skipped: base.skipped },
        });
        return result;
      },
      { headFirst: true },
    );
  }
}
