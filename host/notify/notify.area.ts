import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { ConnectorService } from '../connectors/connectors.service.ts';
import type { EpisodeOutcomes } from '../episodes/episode-outcomes.ts';
import type { PeopleDirectory } from '../identity/people.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { MailService } from '../mail/mail.service.ts';
import { NotifyDelivery } from './delivery.service.ts';
import { NotifySettingsService } from './notify-settings.service.ts';
import { notifyRoutes } from './notify.routes.ts';
import type { OnCall } from './on-call.ts';

export interface NotifyArea extends Area {
  /** Delivers notifications from the outbox (the tick runs it too). */
  readonly delivery: NotifyDelivery;
}

/**
 * Notifications: the on-call settings routes and delivery from the outbox. The outbox and the
 * settings store come from `onCall` (built lower down); delivery subscribes to the notifier.
 */
export function createNotifyArea(d: {
  onCall: OnCall;
  episodes: EpisodeOutcomes;
  mail: Pick<MailService, 'send'>;
  connectors: ConnectorService;
  people: Pick<PeopleDirectory, 'get'>;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
}): NotifyArea {
  const { onCall, connectors, ledger, clock } = d;
  const delivery = new NotifyDelivery({
    outbox: onCall.outbox,
    settings: onCall.store,
    episodes: d.episodes,
    mail: d.mail,
    targets: connectors,
    ledger,
    clock,
    log: d.log.child({ component: 'notify' }),
  });
  onCall.notifier.onQueued(() => delivery.nudge());
  const settings = new NotifySettingsService({
    repo: onCall.store,
    ledger,
    clock,
    directory: {
      person: (email, trx) => d.people.get(email, trx),
      connector: async (name) => (await connectors.list()).connectors.find((c) => c.name === name) ?? null,
      canNotify: (kind) => connectors.canNotify(kind),
      notifyKinds: () =>
        connectors.kinds
          .catalogue()
          .filter((k) => k.capabilities.includes('notify'))
          .map((k) => k.kind),
    },
  });
  return {
    delivery,
    routes: ({ server, log, guard }: Http) => notifyRoutes(server, { log, guard, settings, status: () => delivery.status() }),
  };
}
