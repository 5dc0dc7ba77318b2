import type { Area, Http } from '../area.ts';
import type { PeopleCount } from '../identity/people.ts';
import type { InstallIdentity } from '../install/identity.ts';
import type { Install } from '../install/install.ts';
import type { Checkpointer } from '../ledger/checkpoints.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { LicenceArea } from '../licence/licence.area.ts';
import type { MailService } from '../mail/mail.service.ts';
import { ModeService } from './mode.service.ts';
import { statusRoutes } from './status.routes.ts';
import { StatusService } from './status.service.ts';
import type { SsoSummary } from '../sso/sso-store.ts';

export interface StatusArea extends Area {
  readonly modes: ModeService;
  readonly status: StatusService;
}

/** The install's mode (it subscribes to licence changes) and GET /v1/status. */
export function createStatusArea(d: {
  identity: InstallIdentity;
  install: Pick<Install, 'get' | 'moveMode'>;
  licence: Pick<LicenceArea, 'licences' | 'limits'>;
  people: PeopleCount;
  ledger: Ledger;
  checkpoints: Pick<Checkpointer, 'latest'>;
  mail: Pick<MailService, 'publicBreakGlass' | 'emailCodes'>;
  sso: { summary(): Promise<SsoSummary> };
}): StatusArea {
  const { licences, limits } = d.licence;
  const modes = new ModeService({ licences, people: d.people, install: d.install, ledger: d.ledger });
  const status = new StatusService({
    identity: d.identity,
    licences,
    modes,
    people: d.people,
    ledger: d.ledger,
    checkpoints: d.checkpoints,
    mail: d.mail,
    sso: d.sso,
    usage: () => limits.usage(),
  });
  return { modes, status, routes: ({ server, log }: Http) => statusRoutes(server, { log, status }) };
}
