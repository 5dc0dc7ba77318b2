import type { SecretCipher } from '../secrets/cipher.ts';
import type { Trx } from '../storage/db.ts';

/**
 * Mail settings, stored as the `mail` row of `settings` with the API key sealed. This issue only
 * writes what bootstrap is given; reading and the rest of the mail area come with sign-in.
 */
export class MailSettingsRepo {
  private readonly cipher: SecretCipher;

  constructor(cipher: SecretCipher) {
    this.cipher = cipher;
  }

  async saveApiProvider(trx: Trx, s: { resend_key: string | null; mail_from: string | null }, at: string): Promise<void> {
    const value = JSON.stringify({ provider: 'api', mail_from: s.mail_from, resend_key: s.resend_key === null ? null : this.cipher.encrypt(s.resend_key) });
    await trx('settings').insert({ name: 'mail', value, updated_at: at }).onConflict('name').merge();
  }
}
