import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { PeopleDirectory } from '../identity/people.ts';
import type { ChainHead } from '../ledger/entry.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { VerifyReport } from '../ledger/verify.ts';
import type { Logger } from '../log.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import { DigestMailer, type DigestMailDeps } from './digest-mail.ts';
import { digestRoutes } from './digest.routes.ts';
import { DigestService, type DigestSources } from './digest.service.ts';
import { DigestStateRepo } from './digest-state.repo.ts';
import { LedgerStanding } from './ledger-standing.ts';

export interface DigestArea extends Area {
  readonly digest: DigestService;
  /** The daily e-mail; tests call `mailer.sendFor(clock.now())`. */
  readonly mailer: DigestMailer;
}

/**
 * The digest: GET /v1/digest and the daily e-mail. It owns the `digest_state` settings document
 * and reads every figure through the owning areas' interfaces (docs/digest.md).
 */
export function createDigestArea(d: {
  sources: Omit<DigestSources, 'standing'>;
  verify: () => Promise<VerifyReport>;
  head: () => Promise<ChainHead>;
  /** The newest signed checkpoint (the ledger area's), which the e-mail carries. */
  checkpoint: DigestMailDeps['checkpoint'];
  settings: SettingsStore;
  people: Pick<PeopleDirectory, 'withRoles'>;
  mail: Pick<MailService, 'send'>;
  leases: DigestMailDeps['leases'];
  holder: string;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  config: Pick<Config, 'digestAt' | 'timeZone'>;
}): DigestArea {
  const standing = new LedgerStanding({ verify: d.verify, head: d.head, clock: d.clock });
  const digest = new DigestService({ sources: { ...d.sources, standing }, clock: d.clock });
  const mailer = new DigestMailer({
    digest,
    checkpoint: d.checkpoint,
    people: d.people,
    mail: d.mail,
    leases: d.leases,
    state: new DigestStateRepo(d.settings),
    ledger: d.ledger,
    clock: d.clock,
    log: d.log,
    holder: d.holder,
    at: d.config.digestAt,
    timeZone: d.config.timeZone ?? hostTimeZone(),
  });
  return { digest, mailer, routes: ({ server, log, guard }: Http) => digestRoutes(server, { log, guard, digest }) };
}

/** The host's own time zone (TZ, else the system's), UTC when it cannot tell. */
function hostTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}
