import { isDeepStrictEqual } from 'node:util';
import type { Clock } from '../clock.ts';
import { schemaValidator } from '../json-schema.ts';
import type { RecordEvent } from '../ledger/ledger.service.ts';
import type { Revisions } from '../settings/revisions.ts';
import type { Trx } from '../storage/db.ts';
import type { MailSettings, MailSettingsRepo } from './mail-settings.repo.ts';

type Carried = Omit<MailSettings, 'rev'>;

const EMAIL = { type: 'string', format: 'email', maxLength: 254 };
const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

const carried = schemaValidator<{ mail: Carried | null }>({
  type: 'object',
  additionalProperties: false,
  required: ['mail'],
  properties: {
    mail: nullable({
      type: 'object',
      additionalProperties: false,
      required: ['provider', 'mail_from', 'resend_key', 'smtp_host', 'smtp_port', 'smtp_user', 'smtp_password', 'smtp_security'],
      properties: {
        provider: { type: 'string', enum: ['api', 'smtp'] },
        mail_from: nullable(EMAIL),
        resend_key: nullable({ type: 'string', maxLength: 512 }),
        smtp_host: nullable({ type: 'string', minLength: 1, maxLength: 253 }),
        smtp_port: { type: 'integer', minimum: 1, maximum: 65535 },
        smtp_user: nullable({ type: 'string', minLength: 1, maxLength: 254 }),
        smtp_password: nullable({ type: 'string', maxLength: 1024 }),
        smtp_security: { type: 'string', enum: ['starttls', 'ssl', 'none'] },
      },
    }),
  },
});

const MAIL_SETTING = 'mail';

/**
 * The mail part of the keychain (docs/keychain.md): the provider, sender and their secrets.
 * Applied, they replace this install's mail settings (secrets sealed with its own key), which,
 * like any save, count as untested until an e-mail goes out; `config.mail_saved` by the keychain.
 * A home that has no mail settings carries nothing: the member keeps its own.
 */
export class CarriedMail {
  readonly #repo: MailSettingsRepo;
  readonly #revisions: Revisions;
  readonly #clock: Clock;

  constructor(deps: { repo: MailSettingsRepo; revisions: Revisions; clock: Clock }) {
    this.#repo = deps.repo;
    this.#revisions = deps.revisions;
    this.#clock = deps.clock;
  }

  async export(trx?: Trx): Promise<{ mail: Carried | null }> {
    const s = await this.#repo.load(trx);
    if (s === null) return { mail: null };
    const { rev: _rev, ...rest } = s;
    return { mail: rest };
  }

  async apply(trx: Trx, record: RecordEvent, data: unknown, actor: string): Promise<Record<string, unknown>> {
    const next = carried(data).mail;
    if (next === null) return { changed: false };
    const stored = await this.#repo.load(trx);
    if (stored !== null) {
      const { rev: _rev, ...rest } = stored;
      if (isDeepStrictEqual(rest, next)) return { changed: false };
    }
    const at = this.#clock.now().toISOString();
    await this.#repo.save(trx, next, at);
    await this.#revisions.bump(trx, MAIL_SETTING, actor, at);
    await record({
      type: 'config.mail_saved',
      actor,
      reason: 'mail settings carried by the keychain',
      data: {
        via: 'keychain',
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
    return { changed: true };
  }
}
