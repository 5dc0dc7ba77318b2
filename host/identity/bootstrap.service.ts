import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { InstallRepo } from '../install/install.repo.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Trx } from '../storage/db.ts';
import type { MailSettingsRepo } from '../mail/mail-settings.repo.ts';
import type { ModeService } from '../status/mode.service.ts';
import type { PeopleRepo, Person } from './people.repo.ts';

export interface BootstrapInput {
  email: string;
  name: string;
  resend_key?: string;
  mail_from?: string;
}

/** Creates the first owner, once, with optional mail settings; moves the install to `operating`. */
export class BootstrapService {
  private readonly people: PeopleRepo;
  private readonly install: InstallRepo;
  private readonly mail: MailSettingsRepo;
  private readonly modes: ModeService;
  private readonly ledger: Ledger;
  private readonly clock: Clock;
  /** Set once the access policy exists (it is built after bootstrap). */
  #access: { initialise(trx: Trx, ownerEmail: string, at: string): Promise<unknown> } | null = null;

  useAccess(access: { initialise(trx: Trx, ownerEmail: string, at: string): Promise<unknown> }): void {
    this.#access = access;
  }

  constructor(
    people: PeopleRepo,
    install: InstallRepo,
    mail: MailSettingsRepo,
    modes: ModeService,
    ledger: Ledger,
    clock: Clock,
  ) {
    this.people = people;
    this.install = install;
    this.mail = mail;
    this.modes = modes;
    this.ledger = ledger;
    this.clock = clock;
  }

  async bootstrap(input: BootstrapInput, actor: string): Promise<Person> {
    const now = this.clock.now().toISOString();
    const email = input.email.trim().toLowerCase();
    const person: Person = { email, name: input.name.trim(), role: 'owner', teams: [], tags: [], enabled: true, directory: false, password_set: false, password_expires_at: null, created_at: now, updated_at: now };
    await this.ledger.transact(async (trx, record) => {
      await this.install.lock(trx);
      if ((await this.people.count(trx)) > 0) throw new AppError('already_bootstrapped', 'the first owner exists already');
      if ((await this.modes.current(trx)) === 'setup') throw new AppError('no_licence', 'install a licence or start the trial first');
      await this.people.insert(trx, person);
      await record({ type: 'identity.owner_created', actor, reason: 'first owner created', data: { email, name: person.name } });
      // A new install admits the first owner's domain (unless it is public webmail).
      await this.#access?.initialise(trx, email, now);
      if (input.resend_key !== undefined || input.mail_from !== undefined) {
        await this.mail.saveApiProvider(trx, { resend_key: input.resend_key ?? null, mail_from: input.mail_from ?? null }, now);
        await record({ type: 'config.mail_saved', actor, reason: 'mail settings given at bootstrap', data: { provider: 'api', mail_from: input.mail_from ?? null, key_set: input.resend_key !== undefined } });
      }
      await this.modes.recordChange(trx, record);
    });
    return person;
  }
}
