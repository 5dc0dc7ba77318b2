import type { Mode } from '../http/guard.ts';
import type { PeopleRepo } from '../identity/people.repo.ts';
import type { InstallIdentity } from '../install/identity.ts';
import type { ChainHead } from '../ledger/entry.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import { isUsable, type LicenceStatus } from '../licence/licence.ts';
import type { LicenceService } from '../licence/licence.service.ts';
import { VERSION } from '../version.ts';
import type { ModeService } from './mode.service.ts';

export interface SetupStep {
  step: 'licence' | 'owner';
  done: boolean;
  label: string;
}

export interface Status {
  version: string;
  fingerprint: string;
  mode: Mode;
  licence: Pick<LicenceStatus, 'state' | 'customer' | 'expires_at' | 'in_grace'>;
  setup: { steps: SetupStep[]; done: number; total: number; next: SetupStep['step'] | null };
  ledger_head: ChainHead;
  auth: { sso: { mode: 'off' | 'oidc' | 'ldap'; label: string | null; local: boolean } };
}

/** What GET /v1/status answers: no secrets, open to anyone who can reach the port. */
export class StatusService {
  private readonly identity: InstallIdentity;
  private readonly licences: LicenceService;
  private readonly modes: ModeService;
  private readonly people: PeopleRepo;
  private readonly ledger: Ledger;

  constructor(
    identity: InstallIdentity,
    licences: LicenceService,
    modes: ModeService,
    people: PeopleRepo,
    ledger: Ledger,
  ) {
    this.identity = identity;
    this.licences = licences;
    this.modes = modes;
    this.people = people;
    this.ledger = ledger;
  }

  async status(): Promise<Status> {
    const [licence, mode, owners, head] = await Promise.all([this.licences.status(), this.modes.current(), this.people.count(), this.ledger.head()]);
    const steps: SetupStep[] = [
      { step: 'licence', done: isUsable(licence), label: 'Install a licence or start the 30-day trial' },
      { step: 'owner', done: owners > 0, label: 'Create the first owner' },
    ];
    const done = steps.filter((s) => s.done).length;
    return {
      version: VERSION,
      fingerprint: this.identity.fingerprint,
      mode,
      licence: { state: licence.state, customer: licence.customer, expires_at: licence.expires_at, in_grace: licence.in_grace },
      setup: { steps, done, total: steps.length, next: steps.find((s) => !s.done)?.step ?? null },
      ledger_head: head,
      auth: { sso: { mode: 'off', label: null, local: true } },
    };
  }
}
