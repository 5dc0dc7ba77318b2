import type { Trx } from '../storage/db.ts';
import type { MailSettings } from './mail-settings.repo.ts';

export { SMTP_DEFAULT_PORT, type MailProvider, type MailSettings, type SmtpSecurity } from './mail-settings.repo.ts';

/** What the first owner's bootstrap may do with mail: save the settings it was given, in its transaction. */
export interface InitialMail {
  save(trx: Trx, settings: Omit<MailSettings, 'rev'>, at: string): Promise<string>;
}
