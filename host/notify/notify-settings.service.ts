import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Principal } from '../identity/principal.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Trx } from '../storage/db.ts';
import type { NotifySettingsRepo, StoredNotifySettings } from './notify-settings.repo.ts';
import { checkVersion } from '../settings/revisions.ts';

/** PUT /v1/settings/notifications: the GET's answer is accepted as is (read-only fields ignored). */
export interface NotifySettingsInput {
  recipients?: string[];
  targets?: string[];
  version?: number;
  updated_at?: string | null;
  updated_by?: string | null;
}

export type NotifySettingsView = StoredNotifySettings;

/** What the settings check needs to know of people and connectors. */
export interface NotifyDirectory {
  /** The person with this (lower-case) address, or null. */
  person(email: string, trx?: Trx): Promise<{ enabled: boolean } | null>;
  /** The configured connector of this name, or null. */
  connector(name: string): Promise<{ kind: string } | null>;
  canNotify(kind: string): boolean;
  /** The kinds that can be notification targets, for messages. */
  notifyKinds(): string[];
}

/**
 * The install's on-call recipients and notification targets: who is told when an incident opens
 * and closes. Every change is versioned and recorded as `config.notifications_saved` with the diff.
 */
export class NotifySettingsService {
  readonly #repo: NotifySettingsRepo;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #directory: NotifyDirectory;

  constructor(deps: { repo: NotifySettingsRepo; ledger: Ledger; clock: Clock; directory: NotifyDirectory }) {
    this.#repo = deps.repo;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
    this.#directory = deps.directory;
  }

  get(trx?: Trx): Promise<NotifySettingsView> {
    return this.#repo.get(trx);
  }

  /**
   * Replaces the recipients and/or targets (an omitted one is kept). 400 `invalid_body` naming
   * the field when an address is not a person of the install or a name is not a connector that
   * can notify; 409 `version_conflict` when `version` is not the stored one (docs/api.md, settings round trips). The same
   * settings again change nothing (same version, no event).
   */
  async put(input: NotifySettingsInput, principal: Pick<Principal, 'actor'>): Promise<NotifySettingsView> {
    const recipients = input.recipients === undefined ? null : unique(input.recipients.map((r) => r.trim().toLowerCase()));
    const targets = input.targets === undefined ? null : unique(input.targets.map((r) => r.trim()));
    if (targets !== null) await this.#checkTargets(targets);
    return this.#ledger.transact(
      async (trx, record) => {
        const stored = await this.#repo.get(trx);
        checkVersion(input.version ?? null, stored.version, 'the notification settings');
        if (recipients !== null) await this.#checkRecipients(recipients, trx);
        const next = { recipients: recipients ?? stored.recipients, targets: targets ?? stored.targets };
        const diff = { recipients: listDiff(stored.recipients, next.recipients), targets: listDiff(stored.targets, next.targets) };
        const changed = [diff.recipients, diff.targets].some((d) => d.added.length > 0 || d.removed.length > 0 || d.reordered);
        if (!changed) return stored;
        const at = this.#clock.now().toISOString();
        const saved: StoredNotifySettings = { version: stored.version + 1, ...next, updated_at: at, updated_by: principal.actor };
        await this.#repo.put(trx, saved);
        await record({
          type: 'config.notifications_saved',
          actor: principal.actor,
          reason: `on-call recipients and notification targets saved: ${saved.recipients.length} recipient(s), ${saved.targets.length} target(s)`,
          data: { version: saved.version, recipients: saved.recipients, targets: saved.targets, diff },
        });
        return saved;
      },
      { headFirst: true },
    );
  }

  async #checkRecipients(recipients: string[], trx: Trx): Promise<void> {
    for (const [i, email] of recipients.entries()) {
      const person = await this.#directory.person(email, trx);
      if (person === null) throw new AppError('invalid_body', `recipients.${i}: ${email} is not a person of this install; add them on the People page first`);
      if (!person.enabled) throw new AppError('invalid_body', `recipients.${i}: ${email} is disabled`);
    }
  }

  async #checkTargets(targets: string[]): Promise<void> {
    for (const [i, name] of targets.entries()) {
      const c = await this.#directory.connector(name);
      if (c === null) throw new AppError('invalid_body', `targets.${i}: no connector named ${name} is configured`);
      if (!this.#directory.canNotify(c.kind)) {
        throw new AppError(
          'invalid_body',
          `targets.${i}: connector ${name} is of kind ${c.kind}, which cannot notify (kinds that can: ${this.#directory.notifyKinds().join(', ') || 'none'})`,
        );
      }
    }
  }
}

function unique(list: string[]): string[] {
  return [...new Set(list)];
}

function listDiff(before: string[], after: string[]): { added: string[]; removed: string[]; reordered: boolean } {
  const added = after.filter((x) => !before.includes(x));
  const removed = before.filter((x) => !after.includes(x));
  const reordered = added.length === 0 && removed.length === 0 && before.join('\n') !== after.join('\n');
  return { added, removed, reordered };
}
