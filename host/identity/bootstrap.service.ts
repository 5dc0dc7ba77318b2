import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Install } from '../install/install.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Trx } from '../storage/db.ts';
import { SMTP_DEFAULT_PORT, type InitialMail, type MailProvider, type MailSettings, type SmtpSecurity } from '../mail/mail-settings.ts';
import type { ModeService } from '../status/mode.service.ts';
import type { PeopleRepo } from './people.repo.ts';
import type { Person } from './people.model.ts';

export interface BootstrapInput {
  email: string;
  name: string;
  /** Mail for sign-in codes (optional): `smtp` (an on-premises relay) or `api` (a mail API key). */
  provider?: MailProvider;
  resend_key?: string;
  mail_from?: string;
  smtp_host?: string;
  smtp_port?: number;
  smtp_user?: string;
  smtp_password?: string;
  smtp_security?: SmtpSecurity;
  /** The console's address as people reach it (links in messages, the single sign-on callback). */
  console_address?: string;
}

/** The mail settings a bootstrap body gives, or null when it gives none. */
export function bootstrapMail(input: BootstrapInput): Omit<MailSettings, 'rev'> | null {
  const given = [
    input.provider,
    input.resend_key,
    input.mail_from,
    input.smtp_host,
    input.smtp_port,
    input.smtp_user,
    input.smtp_password,
    input.smtp_security,
  ].some((v) => v !== undefined);
  if (!given) return null;
  const smtpGiven = [input.smtp_host, input.smtp_port, input.smtp_user, input.smtp_password, input.smtp_security].some((v) => v !== undefined);
  const provider: MailProvider = input.provider ?? (smtpGiven ? 'smtp' : 'api');
  if (provider === 'smtp' && input.smtp_host === undefined) throw new AppError('invalid_body', 'smtp_host is required for the smtp provider');
  if (provider === 'api' && smtpGiven) throw new AppError('invalid_body', 'smtp_* fields are for the smtp provider');
  if (provider === 'smtp' && input.resend_key !== undefined) throw new AppError('invalid_body', 'resend_key is for the api provider');
  return {
    provider,
    mail_from: input.mail_from ?? null,
    resend_key: input.resend_key ?? null,
    smtp_host: input.smtp_host ?? null,
    smtp_port: input.smtp_port ?? SMTP_DEFAULT_PORT,
    smtp_user: input.smtp_user ?? null,
    smtp_password: input.smtp_password ?? null,
    smtp_security: input.smtp_security ?? 'starttls',
  };
}

/** Creates the first owner, once, with optional mail settings; moves the install to `operating`. */
export class BootstrapService {
  readonly #people: PeopleRepo;
  readonly #install: Pick<Install, 'lock'>;
  readonly #mail: InitialMail;
  readonly #modes: ModeService;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #access: { initialise(trx: Trx, ownerEmail: string, at: string): Promise<unknown> };
  readonly #consoleAddress: { save(trx: Trx, url: string | null, at: string): Promise<void> };

  constructor(deps: {
    /** The single sign-on settings' console address (ignored when SERVICE_PUBLIC_URL sets it). */
    consoleAddress: { save(trx: Trx, url: string | null, at: string): Promise<void> };
    people: PeopleRepo;
    install: Pick<Install, 'lock'>;
    mail: InitialMail;
    modes: ModeService;
    ledger: Ledger;
    clock: Clock;
    access: { initialise(trx: Trx, ownerEmail: string, at: string): Promise<unknown> };
  }) {
    this.#access = deps.access;
    this.#consoleAddress = deps.consoleAddress;
    this.#people = deps.people;
    this.#install = deps.install;
    this.#mail = deps.mail;
    this.#modes = deps.modes;
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
  }

  async bootstrap(input: BootstrapInput, actor: string): Promise<Person> {
    const now = this.#clock.now().toISOString();
    const email = input.email.trim().toLowerCase();
    const mail = bootstrapMail(input);
    const person: Person = {
      email,
      name: input.name.trim(),
      role: 'owner',
      teams: [],
      tags: [],
      enabled: true,
      directory: false,
      suspended: null,
      password_set: false,
      password_expires_at: null,
      created_at: now,
      updated_at: now,
    };
    await this.#ledger.transact(async (trx, record) => {
      await this.#install.lock(trx);
      if ((await this.#people.count(trx)) > 0) throw new AppError('already_bootstrapped', 'the first owner exists already');
      if ((await this.#modes.current(trx)) === 'setup') throw new AppError('no_licence', 'install a licence or start the trial first');
      await this.#people.insert(trx, person);
      await record({ type: 'identity.owner_created', actor, reason: 'first owner created', data: { email, name: person.name } });
      // A new install admits the first owner's domain (unless it is public webmail).
      await this.#access.initialise(trx, email, now);
      if (mail !== null) {
        await this.#mail.save(trx, mail, now);
        await record({
          type: 'config.mail_saved',
          actor,
          reason: 'mail settings given at bootstrap',
          // Never a secret: only whether each is set.
          data:
            mail.provider === 'smtp'
              ? {
                  provider: 'smtp',
                  mail_from: mail.mail_from,
                  smtp_host: mail.smtp_host,
                  smtp_port: mail.smtp_port,
                  smtp_security: mail.smtp_security,
                  smtp_user: mail.smtp_user,
                  smtp_password_set: mail.smtp_password !== null,
                }
              : { provider: 'api', mail_from: mail.mail_from, key_set: mail.resend_key !== null },
        });
      }
      if (input.console_address !== undefined) await this.#consoleAddress.save(trx, input.console_address, now);
      await this.#modes.recordChange(trx, record);
    });
    return person;
  }
}
