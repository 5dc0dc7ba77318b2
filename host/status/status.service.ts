import type { Mode } from './mode.ts';
import type { PeopleRepo } from '../identity/people.repo.ts';
import type { InstallIdentity } from '../install/identity.ts';
import type { Checkpointer } from '../ledger/checkpoints.ts';
import type { ChainHead } from '../ledger/entry.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import { isUsable, type LicenceStatus } from '../licence/licence.ts';
import type { LicenceService } from '../licence/licence.service.ts';
import type { EmailCodes } from '../mail/mail.service.ts';
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
  /** `services_used`/`services_allowed` (null: unlimited) once the licence limits are wired. */
  licence: Pick<LicenceStatus, 'state' | 'customer' | 'expires_at' | 'in_grace'> & { services_used?: number; services_allowed?: number | null };
  setup: { steps: SetupStep[]; done: number; total: number; next: SetupStep['step'] | null };
  ledger_head: ChainHead;
  /** The newest signed checkpoint (docs/ledger.md), null before the first; a copy of the head that can leave the machine. */
  ledger_checkpoint: { seq: number; hash: string; at: string } | null;
  auth: {
    sso: { mode: 'off' | 'oidc' | 'ldap'; label: string | null; local: boolean };
    break_glass: { open: boolean; reason: string | null };
    /** Whether e-mailed sign-in codes can be sent (docs/sign-in.md): off, untested, working, failing. */
    email_codes: EmailCodes;
  };
}

/** What GET /v1/status answers: no secrets, open to anyone who can reach the port. */
export class StatusService {
  private readonly identity: InstallIdentity;
  private readonly licences: LicenceService;
  private readonly modes: ModeService;
  private readonly people: PeopleRepo;
  private readonly ledger: Ledger;
  private readonly checkpoints: Pick<Checkpointer, 'latest'>;
  #breakGlass: (() => Promise<{ open: boolean; reason: string | null }>) | null = null;

  #emailCodes: (() => Promise<EmailCodes>) | null = null;

  /** The mail area tells whether sign-in codes can be sent (built after status). */
  useEmailCodes(read: () => Promise<EmailCodes>): void {
    this.#emailCodes = read;
  }

  #usage: (() => Promise<{ services_used: number; services_allowed: number | null }>) | null = null;

  /** The licence limits tell how many services count and how many the licence allows (built after status). */
  useLicenceUsage(read: () => Promise<{ services_used: number; services_allowed: number | null }>): void {
    this.#usage = read;
  }

  /** The mail area tells whether break-glass is open (built after status). */
  useBreakGlass(read: () => Promise<{ open: boolean; reason: string | null }>): void {
    this.#breakGlass = read;
  }

  constructor(
    identity: InstallIdentity,
    licences: LicenceService,
    modes: ModeService,
    people: PeopleRepo,
    ledger: Ledger,
    checkpoints: Pick<Checkpointer, 'latest'>,
  ) {
    this.identity = identity;
    this.licences = licences;
    this.modes = modes;
    this.people = people;
    this.ledger = ledger;
    this.checkpoints = checkpoints;
  }

  async status(): Promise<Status> {
    const [licence, mode, owners, head, checkpoint] = await Promise.all([
      this.licences.status(),
      this.modes.current(),
      this.people.count(),
      this.ledger.head(),
      this.checkpoints.latest(),
    ]);
    const steps: SetupStep[] = [
      { step: 'licence', done: isUsable(licence), label: 'Install a licence or start the 30-day trial' },
      { step: 'owner', done: owners > 0, label: 'Create the first owner' },
    ];
    const done = steps.filter((s) => s.done).length;
    // Break-glass exists only once the first owner does: before that the admin token bootstraps.
    const glass = owners > 0 && this.#breakGlass !== null ? await this.#breakGlass() : { open: false, reason: null };
    const usage = this.#usage === null ? {} : await this.#usage();
    const emailCodes = this.#emailCodes === null ? 'off' : await this.#emailCodes();
    return {
      version: VERSION,
      fingerprint: this.identity.fingerprint,
      mode,
      licence: { state: licence.state, customer: licence.customer, expires_at: licence.expires_at, in_grace: licence.in_grace, ...usage },
      setup: { steps, done, total: steps.length, next: steps.find((s) => !s.done)?.step ?? null },
      ledger_head: head,
      ledger_checkpoint: checkpoint,
      auth: { sso: { mode: 'off', label: null, local: true }, break_glass: glass, email_codes: emailCodes },
    };
  }
}
