import type { MailInput } from './mail.service.ts';
import { randomUUID } from 'node:crypto';
import type { SecretCipher } from '../secrets/cipher.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { Trx } from '../storage/db.ts';

export type MailProvider = 'api' | 'smtp';
export type SmtpSecurity = 'starttls' | 'ssl' | 'none';

export const SMTP_DEFAULT_PORT = 587;

/** The mail settings with their secrets in the clear: only ever held in memory. */
export interface MailSettings {
  provider: MailProvider;
  mail_from: string | null;
  resend_key: string | null;
  smtp_host: string | null;
  smtp_port: number;
  smtp_user: string | null;
  smtp_password: string | null;
  smtp_security: SmtpSecurity;
  /** Changes on every save; a send outcome counts only for the revision it was made with. */
  rev: string | null;
}

/** The outcome of the most recent send attempt, shared by every host process on the database. */
export interface MailState {
  ok: boolean;
  reason: string | null;
  at: string;
  /** The settings revision the attempt used (null: settings without a revision, or none). */
  rev: string | null;
}

/** The `mail` row as stored: secrets sealed. Rows from older versions may lack fields (then defaults). */
interface StoredMail extends MailInput {
  rev?: string | null;
}

const MAIL = 'mail';
const STATE = 'mail_state';

/**
 * Mail settings (the `mail` settings document, secrets sealed with the cipher) and the mail
 * state (`mail_state`: the outcome of the last send attempt). Saving settings resets the state.
 */
export class MailSettingsRepo {
  readonly #settings: SettingsStore;
  readonly #cipher: SecretCipher;

  constructor(deps: { settings: SettingsStore; cipher: SecretCipher }) {
    this.#settings = deps.settings;
    this.#cipher = deps.cipher;
  }

  /** The settings with secrets unsealed; null when mail was never configured. */
  async load(trx?: Trx): Promise<MailSettings | null> {
    const s = await this.#settings.get<StoredMail>(MAIL, trx);
    if (s === null) return null;
    return {
      provider: s.provider ?? (s.smtp_host ? 'smtp' : 'api'),
      mail_from: s.mail_from ?? null,
      resend_key: this.#open(s.resend_key),
      smtp_host: s.smtp_host ?? null,
      smtp_port: s.smtp_port ?? SMTP_DEFAULT_PORT,
      smtp_user: s.smtp_user ?? null,
      smtp_password: this.#open(s.smtp_password),
      smtp_security: s.smtp_security ?? 'starttls',
      rev: s.rev ?? null,
    };
  }

  /** The revision of the stored settings (null: none stored), without unsealing any secret. */
  async rev(trx?: Trx): Promise<string | null> {
    return (await this.#settings.get<StoredMail>(MAIL, trx))?.rev ?? null;
  }

  /** Stores `s` under a new revision and resets the mail state; returns the revision. */
  async save(trx: Trx, s: Omit<MailSettings, 'rev'>, at: string): Promise<string> {
    const rev = randomUUID();
    const stored: StoredMail = {
      provider: s.provider,
      mail_from: s.mail_from,
      resend_key: this.#seal(s.resend_key),
      smtp_host: s.smtp_host,
      smtp_port: s.smtp_port,
      smtp_user: s.smtp_user,
      smtp_password: this.#seal(s.smtp_password),
      smtp_security: s.smtp_security,
      rev,
    };
    await this.#settings.put(trx, MAIL, stored, at);
    await this.#settings.put(trx, STATE, { ok: false, reason: null, at, rev } satisfies MailState, at);
    return rev;
  }

  async state(trx?: Trx): Promise<MailState | null> {
    return this.#settings.get<MailState>(STATE, trx);
  }

  async putState(state: MailState): Promise<void> {
    await this.#settings.put(null, STATE, state, state.at);
  }

  #seal(plain: string | null): string | null {
    return plain === null || plain === '' ? null : this.#cipher.encrypt(plain);
  }

  #open(sealed: string | null | undefined): string | null {
    if (sealed === null || sealed === undefined || sealed === '') return null;
    return this.#cipher.decrypt(sealed);
  }
}
