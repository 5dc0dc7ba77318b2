import type { Clock } from '../clock.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { Db, Trx } from '../storage/db.ts';
import { Notifier, OnCallAudience } from './notifier.ts';
import { NotifySettingsRepo } from './notify-settings.repo.ts';
import { OutboxRepo } from './outbox.repo.ts';

/**
 * The notify area's lower half, built before the areas that use it: the on-call recipients and
 * targets (the `notifications` settings document; the mail area sends a test e-mail without an
 * address to the recipients) and the outbox the episodes write their messages to (`Notifier`).
 * The notify area (delivery, settings routes) takes it whole; `store` and `outbox` are for it only.
 */
export interface OnCall {
  readonly store: NotifySettingsRepo;
  readonly outbox: OutboxRepo;
  /** Queues an incident's messages in the episode change's transaction (EpisodeNotifier). */
  readonly notifier: Notifier;
  recipients(): Promise<string[]>;
}

export function createOnCall(d: { db: Db; settings: SettingsStore; clock: Clock; consoleAddress: { get(trx?: Trx): Promise<string | null> } }): OnCall {
  const store = new NotifySettingsRepo(d.settings);
  const outbox = new OutboxRepo(d.db);
  const notifier = new Notifier({ outbox, audience: new OnCallAudience(store), clock: d.clock, consoleAddress: d.consoleAddress });
  return { store, outbox, notifier, recipients: async () => (await store.get()).recipients };
}
