import type { Mode } from './mode.ts';
import type { PeopleCount } from '../identity/people.ts';
import type { InstallIdentity } from '../install/identity.ts';
import type { Checkpointer } from '../ledger/checkpoints.ts';
import type { ChainHead } from '../ledger/entry.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import { isUsable, type LicenceStatus } from '../licence/licence.ts';
import type { LicenceService } from '../licence/licence.service.ts';
import type { EmailCodes } from '../mail/mail.service.ts';
import { VERSION } from '../version.ts';
import type { ModeService } from './mode.service.ts';
import type { SsoSummary } from '../sso/sso-store.ts';

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
    /** The ways in besides codes (docs/sign-in.md): `off`, `oidc`, `ldap` or `both`; the button's label; whether codes and passwords work. */
    sso: SsoSummary;
    break_glass: { open: boolean; reason: string | null };
    /** Whether e-mailed sign-in codes can be sent (docs/sign-in.md): off, untested, working, failing. */
    email_codes: EmailCodes;
  };
}

/** What GET /v1/status answers: no secrets, open to anyone who can reach the port. */
export class StatusService {
  readonly #identity: InstallIdentity;
  readonly #licences: LicenceService;
  readonly #modes: ModeService;
  readonly #people: PeopleCount;
  readonly #ledger: Ledger;
  readonly #checkpoints: Pick<Checkpointer, 'latest'>;
  readonly #breakGlass: () => Promise<{ open: boolean; reason: string | null }>;
  readonly #emailCodes: () => Promise<EmailCodes>;
  readonly #usage: () => Promise<{ services_used: number; services_allowed: number | null }>;
  readonly #sso: () => Promise<SsoSummary>;

  constructor(deps: {
    /** From the single sign-on settings: what the sign-in page offers. */
    sso: { summary(): Promise<SsoSummary> };
    identity: InstallIdentity;
    licences: LicenceService;
    modes: ModeService;
    people: PeopleCount;
    ledger: Ledger;
    checkpoints: Pick<Checkpointer, 'latest'>;
    /** From the mail area: whether break-glass is open, and whether sign-in codes can be sent. */
    mail: { publicBreakGlass(): Promise<{ open: boolean; reason: string | null }>; emailCodes(): Promise<EmailCodes> };
    /** From the licence area: how many services count and how many the licence allows. */
    usage: () => Promise<{ services_used: number; services_allowed: number | null }>;
  }) {
    const { mail } = deps;
    this.#identity = deps.identity;
    this.#licences = deps.licences;
    this.#modes = deps.modes;
    this.#people = deps.people;
    this.#ledger = deps.ledger;
    this.#checkpoints = deps.checkpoints;
    this.#breakGlass = () => mail.publicBreakGlass();
    this.#emailCodes = () => mail.emailCodes();
    this.#usage = deps.usage;
    this.#sso = () => deps.sso.summary();
  }

  async status(): Promise<Status> {
    const [licence, mode, owners, head, checkpoint] = await Promise.all([
      this.#licences.status(),
      this.#modes.current(),
      this.#people.count(),
      this.#ledger.head(),
      this.#checkpoints.latest(),
    ]);
    const steps: SetupStep[] = [
      { step: 'licence', done: isUsable(licence), label: 'Install a licence or start the 30-day trial' },
      { step: 'owner', done: owners > 0, label: 'Create the first owner' },
    ];
    const done = steps.filter((s) => s.done).length;
    // Break-glass exists only once the first owner does: before that the admin token bootstraps.
    const glass = owners > 0 ? await this.#breakGlass() : { open: false, reason: null };
    const usage = await this.#usage();
    const emailCodes = await this.#emailCodes();
    const sso = await this.#sso();
    return {
      version: VERSION,
      fingerprint: this.#identity.fingerprint,
      mode,
      licence: { state: licence.state, customer: licence.customer, expires_at: licence.expires_at, in_grace: licence.in_grace, ...usage },
      setup: { steps, done, total: steps.length, next: steps.find((s) => !s.done)?.step ?? null },
      ledger_head: head,
      ledger_checkpoint: checkpoint,
      auth: { sso, break_glass: glass, email_codes: emailCodes },
    };
  }
}
