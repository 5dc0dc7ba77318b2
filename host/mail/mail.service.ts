import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { plainLine, plainText } from '../escape.ts';
import type { Principal } from '../identity/principal.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import { checkVersion, Revisions, takeBack, type Revision } from '../settings/revisions.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import { MailSettingsRepo, SMTP_DEFAULT_PORT, type MailProvider, type MailSettings, type SmtpSecurity } from './mail-settings.repo.ts';
import type { InitialMail } from './mail-settings.ts';
import { ResendClient, senderVerified } from './resend.ts';
import { sendSmtp, type Message } from './smtp.ts';
import { clip } from '../text.ts';

export type EmailCodes = 'off' | 'untested' | 'working' | 'failing';

export type SendResult = { ok: true } | { ok: false; reason: string };

/** The API provider's sender when no `mail_from` is set: Resend's shared testing sender. */
export const DEFAULT_API_SENDER = 'onboarding@resend.dev';

export const NO_PROVIDER = 'no mail provider configured';
export const NO_SEND_YET = 'no successful send since the mail settings were saved';
/** What the public status says of a failed send (the reason itself is for people signed in). */
export const SEND_FAILED = 'the last e-mail could not be sent (the reason is under Settings → Mail and in the audit log)';

/** PUT /v1/settings/mail. Omitted fields keep their stored value; null clears one; a blank or
 * omitted secret keeps the stored secret; `provider: null` keeps the provider. What GET adds
 * (MAIL_GET_ONLY, `updated_*`) is ignored; `version` is the one the caller read. */
export interface MailInput {
  version?: number | null;
  provider?: MailProvider | null;
  mail_from?: string | null;
  resend_key?: string | null;
  smtp_host?: string | null;
  smtp_port?: number;
  smtp_user?: string | null;
  smtp_password?: string | null;
  smtp_security?: SmtpSecurity;
}

/** Fields GET adds that PUT takes back and ignores (besides `version`, `updated_at`, `updated_by`). */
export const MAIL_GET_ONLY = ['resend_key_set', 'smtp_password_set', 'last_send', 'break_glass'] as const;

/** The settings row's name, and so its revision's. */
const MAIL_SETTING = 'mail';

/** What GET shows: never a secret, only whether each is set. */
export interface MailView extends Revision {
  provider: MailProvider | null;
  mail_from: string | null;
  resend_key_set: boolean;
  smtp_host: string | null;
  smtp_port: number;
  smtp_user: string | null;
  smtp_password_set: boolean;
  smtp_security: SmtpSecurity;
  /** The most recent send attempt since the settings were saved; null: none yet. */
  last_send: { ok: boolean; reason: string | null; at: string } | null;
  break_glass: { open: boolean; reason: string | null };
}

export interface MailDeps {
  settings: SettingsStore;
  cipher: SecretCipher;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  config: Config;
  /** Where a test e-mail without an address goes first: the on-call recipients (the notify area's settings). */
  onCallRecipients?: () => Promise<string[]>;
  /** Where it goes when there are none: the first owner's address (the identity area). */
  firstOwner?: () => Promise<string | null>;
}

/** Merges tried before a PUT gives up on settings that keep changing under it. */
const PUT_ATTEMPTS = 5;
const EMPTY: Omit<MailSettings, 'rev' | 'provider'> = {
  mail_from: null,
  resend_key: null,
  smtp_host: null,
  smtp_port: SMTP_DEFAULT_PORT,
  smtp_user: null,
  smtp_password: null,
  smtp_security: 'starttls',
};

/**
 * Outgoing mail: the settings (GET/PUT/test) and `send`, which sign-in uses for codes. The
 * outcome of the last send is kept in the database (`mail_state`), so every host process
 * agrees on whether break-glass sign-in with the admin token is open.
 *
 * Over 300 lines and one concept: the settings, the send and the break-glass state are one
 * state machine (a PUT that changes how mail goes resets "working" and may open break-glass;
 * a send records its outcome, which closes or opens it; a test is a send), and each step reads
 * and writes the same `mail_state` under the same scrubbing of secrets. The transports
 * themselves already live apart (smtp.ts, resend.ts), as do the stored settings
 * (mail-settings.repo.ts).
 */
export class MailService {
  readonly repo: MailSettingsRepo;
  readonly #ledger: Ledger;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #config: Config;
  readonly #api: ResendClient;
  readonly #revisions: Revisions;
  readonly #delivered: Array<() => Promise<unknown>> = [];

  constructor(deps: MailDeps) {
    this.repo = new MailSettingsRepo({ settings: deps.settings, cipher: deps.cipher });
    this.#revisions = new Revisions(deps.settings);
    this.#ledger = deps.ledger;
    this.#clock = deps.clock;
    this.#log = deps.log;
    this.#config = deps.config;
    this.#api = new ResendClient(deps.config.mailApiUrl);
    this.#onCallRecipients = deps.onCallRecipients ?? noOnCallRecipients;
    this.#firstOwner = deps.firstOwner ?? (async () => null);
  }

  /**
   * Never throws: sends, or says why not. Records the outcome as the mail state (which opens or
   * closes break-glass sign-in), unless `signInState` is false: a report (the daily digest) that
   * fails to go out must not reopen break-glass, nor one that goes out close it; what says
   * whether sign-in codes can be delivered is the sign-in mail itself and the test e-mail.
   */
  async send(to: string, subject: string, text: string, opts: { signInState?: boolean } = {}): Promise<SendResult> {
    let settings: MailSettings | null;
    try {
      settings = await this.repo.load();
    } catch (err) {
      this.#log.error({ err }, 'mail settings could not be read');
      return { ok: false, reason: 'unreachable: the mail settings could not be read' };
    }
    let result: SendResult;
    try {
      result = await this.#deliver(settings, { to, subject, text });
    } catch (err) {
      this.#log.error({ err }, 'mail send failed unexpectedly');
      result = { ok: false, reason: 'unreachable: unexpected error while sending' };
    }
    if (!result.ok) {
      result = { ok: false, reason: scrubReason(result.reason, settings) };
      this.#log.warn({ mail: { provider: settings?.provider ?? null, reason: result.reason } }, 'mail not sent');
    }
    if (opts.signInState === false) return result;
    try {
      await this.repo.putState({ ok: result.ok, reason: result.ok ? null : result.reason, at: this.#clock.now().toISOString(), rev: settings?.rev ?? null });
    } catch (err) {
      this.#log.error({ err }, 'could not record the mail state');
    }
    if (result.ok) {
      for (const l of this.#delivered)
        await l().catch((err: unknown) => this.#log.error({ err }, 'could not end the break-glass sessions after a successful send'));
    }
    return result;
  }

  /** Open unless the most recent send attempt since the mail settings last changed succeeded. */
  async breakGlass(): Promise<{ open: boolean; reason: string | null }> {
    const settings = await this.repo.load();
    if (!usable(settings)) return { open: true, reason: NO_PROVIDER };
    const state = await this.repo.state();
    if (state === null || state.rev !== settings.rev || (!state.ok && state.reason === null)) return { open: true, reason: NO_SEND_YET };
    if (!state.ok) return { open: true, reason: state.reason };
    return { open: false, reason: null };
  }

  /**
   * Break-glass as GET /v1/status shows it to anyone who can reach the port: a failed send's
   * reason is replaced by a fixed sentence, since it may name the address the code went to
   * (which would tell a stranger who may sign in). The full reason is in GET /v1/settings/mail
   * (signed in) and the ledger.
   */
  async publicBreakGlass(): Promise<{ open: boolean; reason: string | null }> {
    const glass = await this.breakGlass();
    if (!glass.open || glass.reason === NO_PROVIDER || glass.reason === NO_SEND_YET) return glass;
    return { open: true, reason: SEND_FAILED };
  }

  /**
   * Whether e-mailed sign-in codes can work, for the sign-in page (GET /v1/status
   * `auth.email_codes`): `off` no mail provider is configured; `untested` configured, no send
   * tried since it was saved; `working` the last send worked; `failing` the last send failed.
   */
  async emailCodes(): Promise<EmailCodes> {
    const settings = await this.repo.load();
    if (!usable(settings)) return 'off';
    const state = await this.repo.state();
    if (state === null || state.rev !== settings.rev || (!state.ok && state.reason === null)) return 'untested';
    return state.ok ? 'working' : 'failing';
  }

  async get(): Promise<MailView> {
    const settings = await this.repo.load();
    const state = await this.repo.state();
    const s = settings ?? { ...EMPTY, provider: null, rev: null };
    const lastSend =
      state !== null && settings !== null && state.rev === settings.rev && (state.ok || state.reason !== null)
        ? { ok: state.ok, reason: state.reason, at: state.at }
        : null;
    return {
      ...(await this.#revisions.get(MAIL_SETTING)),
      provider: s.provider,
      mail_from: s.mail_from,
      resend_key_set: s.resend_key !== null,
      smtp_host: s.smtp_host,
      smtp_port: s.smtp_port,
      smtp_user: s.smtp_user,
      smtp_password_set: s.smtp_password !== null,
      smtp_security: s.smtp_security,
      last_send: lastSend,
      break_glass: await this.breakGlass(),
    };
  }

  /**
   * Merges `input` into the stored settings and saves them. Two PUTs at once each keep the
   * other's fields: the save checks, under the ledger's chain-head lock, that the settings are
   * still the revision the merge started from, and merges again on the newer one if not.
   */
  async put(body: MailInput, principal: Principal): Promise<MailView> {
    const { doc, version } = takeBack(body, MAIL_GET_ONLY);
    const input = doc as MailInput;
    for (let attempt = 1; ; attempt++) {
      const saved = await this.#putOnce(input, principal, version);
      if (saved) return this.get();
      if (attempt === PUT_ATTEMPTS) throw new AppError('mail_settings_conflict', 'the mail settings kept changing while this change was saved; try again');
    }
  }

  /**
   * One merge and save; false when the settings changed since they were read. 409
   * `version_conflict` when `expected` is not the stored version. Settings equal to the stored
   * ones (a GET sent back) save nothing: same version, no event, the last send still counts.
   */
  async #putOnce(input: MailInput, principal: Principal, expected: number | null): Promise<boolean> {
    checkVersion(expected, (await this.#revisions.get(MAIL_SETTING)).version, 'the mail settings');
    const stored = await this.repo.load();
    const base = stored ?? { ...EMPTY, provider: 'api' as MailProvider, rev: null };
    const keep = <T>(given: T | undefined, old: T): T => (given === undefined ? old : given);
    const secret = (given: string | null | undefined, old: string | null): string | null => (given === undefined || given === '' ? old : given);
    const provider: MailProvider = input.provider ?? (typeof input.smtp_host === 'string' ? 'smtp' : (stored?.provider ?? 'api'));
    const next: Omit<MailSettings, 'rev'> = {
      provider,
      mail_from: keep(input.mail_from, base.mail_from),
      resend_key: secret(input.resend_key, base.resend_key),
      smtp_host: keep(input.smtp_host, base.smtp_host),
      smtp_port: keep(input.smtp_port, base.smtp_port),
      smtp_user: keep(input.smtp_user, base.smtp_user),
      smtp_password: secret(input.smtp_password, base.smtp_password),
      smtp_security: keep(input.smtp_security, base.smtp_security),
    };
    if (stored === null ? input.provider == null && sameSettings(next, { ...EMPTY, provider }) : sameSettings(next, stored)) return true;
    // A kept SMTP password goes only to the server it was entered for: re-pointing the settings
    // at another host, port or security is how an admin would otherwise read it.
    if (stored?.smtp_password != null && next.smtp_host !== null && (input.smtp_password === undefined || input.smtp_password === '')) {
      const moved = SMTP_DESTINATION.find((k) => next[k] !== stored[k]);
      if (moved !== undefined)
        throw new AppError(
          'secret_required',
          `smtp_password must be given again: ${moved} changed, and a stored password is only ever sent where it was entered for`,
        );
    }
    if (provider === 'smtp' && next.smtp_host === null) throw new AppError('invalid_body', 'smtp_host is required for the smtp provider');
    if (provider === 'api' && next.resend_key === null) throw new AppError('invalid_body', 'resend_key is required for the api provider');
    if (provider === 'api' && next.mail_from !== null) {
      const listed = await this.#api.domains(next.resend_key!);
      if (!listed.ok) throw new AppError('mail_failed', `could not check the sender's domain with the mail API: ${scrubReason(listed.reason, next)}`);
      if (!senderVerified(next.mail_from, listed.domains)) {
        throw new AppError(
          'sender_not_verified',
          `${next.mail_from.slice(next.mail_from.lastIndexOf('@') + 1)} is not a domain (or a subdomain of a domain) the mail provider reports verified`,
        );
      }
    }
    const at = this.#clock.now().toISOString();
    return this.#ledger.transact(
      async (trx, record) => {
        if ((await this.repo.rev(trx)) !== (stored?.rev ?? null)) return false;
        checkVersion(expected, (await this.#revisions.get(MAIL_SETTING, trx)).version, 'the mail settings');
        await this.repo.save(trx, next, at);
        await this.#revisions.bump(trx, MAIL_SETTING, principal.actor, at);
        await record({
          type: 'config.mail_saved',
          actor: principal.actor,
          reason: 'mail settings saved',
          data: {
            provider: next.provider,
            mail_from: next.mail_from,
            smtp_host: next.smtp_host,
            smtp_port: next.smtp_port,
            smtp_security: next.smtp_security,
            smtp_user: next.smtp_user,
            resend_key_set: next.resend_key !== null,
            smtp_password_set: next.smtp_password !== null,
          },
        });
        return true;
      },
      { headFirst: true },
    );
  }

  /** Called after every successful send: break-glass is closed from then on (identity subscribes and ends its sessions). */
  onDelivered(listener: () => Promise<unknown>): void {
    this.#delivered.push(listener);
  }

  /** The mail settings the first owner's bootstrap saves, in its own transaction. */
  get initial(): InitialMail {
    return this.repo;
  }

  readonly #onCallRecipients: () => Promise<string[]>;
  readonly #firstOwner: () => Promise<string | null>;

  /** Who a test e-mail without `to` goes to: the signed-in person, else the on-call recipients, else the first owner. */
  async testRecipients(principal: Principal): Promise<string[]> {
    if (principal.email !== null && principal.email !== undefined) return [principal.email];
    const onCall = [...new Set((await this.#onCallRecipients()).map((a) => a.trim().toLowerCase()).filter((a) => a !== ''))];
    if (onCall.length > 0) return onCall;
    const owner = await this.#firstOwner();
    return owner === null ? [] : [owner];
  }

  /**
   * Sends a test message to `to`; without it to the signed-in person, or for the admin token to
   * the on-call recipients or else the first owner (`testRecipients`); 502 `mail_failed` saying why.
   */
  async test(principal: Principal, to?: string): Promise<{ ok: true; to: string; recipients: string[]; provider: MailProvider | null }> {
    const recipients = to !== undefined ? [to] : await this.testRecipients(principal);
    if (recipients.length === 0) throw new AppError('invalid_body', 'there is no one to send a test e-mail to: give {"to": "<address>"}');
    const provider = async () => (await this.repo.load().catch(() => null))?.provider ?? null;
    for (const recipient of recipients) {
      const result = await this.send(
        recipient,
        'Test e-mail from the on-call service',
        `This is a test e-mail from the on-call service, sent at the request of ${principal.actor}.\nIf you received it, sign-in codes can be delivered.\n`,
      );
      await this.#ledger.append({
        type: 'config.mail_tested',
        actor: principal.actor,
        reason: result.ok ? 'test e-mail sent' : clip(`test e-mail failed: ${result.reason}`, 4000),
        data: result.ok
          ? { ok: true, to: recipient, provider: await provider() }
          : { ok: false, to: recipient, provider: await provider(), reason: result.reason },
      });
      if (!result.ok) throw new AppError('mail_failed', `the test e-mail to ${recipient} was not sent: ${result.reason}`);
    }
    return { ok: true, to: recipients.join(', '), recipients, provider: await provider() };
  }

  async #deliver(s: MailSettings | null, raw: { to: string; subject: string; text: string }): Promise<SendResult> {
    if (!usable(s)) return { ok: false, reason: NO_PROVIDER };
    // Whatever an e-mail's author escaped, no subject reaches a provider with a line break (a
    // header of its own) and no body with a terminal escape or control character (host/escape.ts).
    const m = { to: raw.to, subject: plainLine(raw.subject), text: plainText(raw.text) };
    if (s.provider === 'smtp') {
      const message: Message = { ...m, from: s.mail_from ?? smtpDefaultSender(s) };
      return sendSmtp(
        { host: s.smtp_host!, port: s.smtp_port, security: s.smtp_security, user: s.smtp_user, password: s.smtp_password, caFile: this.#config.mailCaFile },
        message,
      );
    }
    return this.#api.send(s.resend_key!, { ...m, from: s.mail_from ?? DEFAULT_API_SENDER });
  }
}

/** The default seam: no on-call recipients (the notifications settings are not wired here). */
export const noOnCallRecipients = async (): Promise<string[]> => [];

function usable(s: MailSettings | null): s is MailSettings {
  if (s === null) return false;
  return s.provider === 'smtp' ? s.smtp_host !== null && s.smtp_host !== '' : s.resend_key !== null && s.resend_key !== '';
}

/** SMTP without `mail_from`: the SMTP user when it is an address, else oncall@<smtp host>. */
function smtpDefaultSender(s: MailSettings): string {
  return s.smtp_user !== null && /^[^@\s]+@[^@\s]+$/.test(s.smtp_user) ? s.smtp_user : `oncall@${s.smtp_host}`;
}

/** A failure reason, cut short and with any secret it might echo removed. */
function scrubReason(reason: string, s: Pick<MailSettings, 'resend_key' | 'smtp_password'> | null): string {
  let out = reason.replace(/\s+/g, ' ').trim();
  for (const secret of [s?.resend_key, s?.smtp_password]) {
    if (typeof secret === 'string' && secret.length > 0) out = out.split(secret).join('[redacted]');
  }
  return clip(out, 497, '...');
}

/** What says where the SMTP password is sent; changing one needs the password again. */
const SMTP_DESTINATION = ['smtp_host', 'smtp_port', 'smtp_security'] as const;

/** Whether two settings send the same way (the revision aside). */
function sameSettings(a: Omit<MailSettings, 'rev'>, b: Omit<MailSettings, 'rev'>): boolean {
  const keys: Array<keyof Omit<MailSettings, 'rev'>> = [
    'provider',
    'mail_from',
    'resend_key',
    'smtp_host',
    'smtp_port',
    'smtp_user',
    'smtp_password',
    'smtp_security',
  ];
  return keys.every((k) => a[k] === b[k]);
}
