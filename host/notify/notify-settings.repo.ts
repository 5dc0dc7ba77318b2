import type { SettingsStore } from '../settings/settings.model.ts';
import type { Trx } from '../storage/db.ts';

/** The on-call recipients and notification targets as stored (the `notifications` settings document). */
export interface StoredNotifySettings {
  /** Bumped on every change; 0 means never saved. */
  version: number;
  /** E-mail addresses of people of the install, lower case. */
  recipients: string[];
  /** Names of connectors whose kind can `notify`. */
  targets: string[];
  updated_at: string | null;
  updated_by: string | null;
}

const NAME = 'notifications';

export const EMPTY_NOTIFY_SETTINGS: StoredNotifySettings = Object.freeze({
  version: 0,
  recipients: [],
  targets: [],
  updated_at: null,
  updated_by: null,
}) as StoredNotifySettings;

/** Reads and writes the `notifications` settings document through the shared settings table. */
export class NotifySettingsRepo {
  readonly #settings: SettingsStore;

  constructor(settings: SettingsStore) {
    this.#settings = settings;
  }

  async get(trx?: Trx): Promise<StoredNotifySettings> {
    const s = await this.#settings.get<StoredNotifySettings>(NAME, trx);
    return s === null ? { ...EMPTY_NOTIFY_SETTINGS, recipients: [], targets: [] } : s;
  }

  async put(trx: Trx, s: StoredNotifySettings): Promise<void> {
    await this.#settings.put(trx, NAME, s, s.updated_at ?? new Date(0).toISOString());
  }
}
