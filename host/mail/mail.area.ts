import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { PeopleDirectory } from '../identity/people.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { OnCall } from '../notify/on-call.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import { Revisions } from '../settings/revisions.ts';
import { CarriedMail } from './mail.carried.ts';
import { mailRoutes } from './mail.routes.ts';
import { MailService } from './mail.service.ts';

export interface MailArea extends Area {
  readonly mail: MailService;
  /** The mail settings as the keychain carries them (mail.carried.ts). */
  readonly carried: CarriedMail;
}

/** Outgoing mail and its settings (the `mail` and `mail_state` settings documents). */
export function createMailArea(d: {
  settings: SettingsStore;
  cipher: SecretCipher;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  config: Config;
  people: Pick<PeopleDirectory, 'firstOwner'>;
  onCall: Pick<OnCall, 'recipients'>;
}): MailArea {
  // A test e-mail asked for with the admin token and no address goes to the on-call recipients
  // (the notifications settings), else the first owner.
  const mail = new MailService({
    settings: d.settings,
    cipher: d.cipher,
    ledger: d.ledger,
    clock: d.clock,
    log: d.log,
    config: d.config,
    onCallRecipients: () => d.onCall.recipients(),
    firstOwner: () => d.people.firstOwner(),
  });
  const carried = new CarriedMail({ repo: mail.repo, revisions: new Revisions(d.settings), clock: d.clock });
  return { mail, carried, routes: ({ server, log, guard }: Http) => mailRoutes(server, { log, guard, mail }) };
}
