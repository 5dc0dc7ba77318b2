import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * AES-256-GCM for secrets at rest. The key comes from SERVICE_SECRET_KEY (any string of 32+
 * characters, hashed to 256 bits), else from `secret.key` in the data directory, created with
 * mode 0600 on first use. Several hosts on one database must share SERVICE_SECRET_KEY.
 */
export class SecretCipher {
  readonly #key: Buffer;
  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('secret key must be 32 bytes');
    this.#key = key;
  }

  static load(secretKey: string | null, dataDir: string): SecretCipher {
    if (secretKey !== null) return new SecretCipher(createHash('sha256').update(secretKey, 'utf8').digest());
    const file = path.join(dataDir, 'secret.key');
    if (!existsSync(file)) {
      mkdirSync(dataDir, { recursive: true });
      try {
        writeFileSync(file, randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
    }
    const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    return new SecretCipher(key);
  }

  /** A key for one purpose (HKDF-SHA256 of the secret key): the secret itself never leaves here. */
  derive(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.#key, Buffer.alloc(0), `oncall:${purpose}`, 32));
  }

  /** `v1.<iv>.<tag>.<ciphertext>`, all base64url. */
  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  decrypt(sealed: string): string {
    const [v, iv, tag, body] = sealed.split('.');
    if (v !== 'v1' || iv === undefined || tag === undefined || body === undefined) throw new Error('not a sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}
