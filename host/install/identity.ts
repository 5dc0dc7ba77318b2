import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import type { Db } from '../storage/db.ts';
import { InstallRepo, type InstallRow } from './install.repo.ts';

/**
 * Who this install is: a fingerprint derived from its Ed25519 public key, and that key, which
 * signs ledger checkpoints and trial licences. The private key is stored sealed with the secret
 * key, so someone who can only write the database cannot forge a signature.
 */
export class InstallIdentity {
  readonly fingerprint: string;
  readonly #privateKey: KeyObject;
  readonly publicKey: KeyObject;

  constructor(privateKey: KeyObject, publicKey: KeyObject) {
    this.#privateKey = privateKey;
    this.publicKey = publicKey;
    this.fingerprint = fingerprintOf(publicKey);
  }

  sign(message: string): string {
    return sign(null, Buffer.from(message, 'utf8'), this.#privateKey).toString('base64');
  }

  verify(message: string, signature: string): boolean {
    try {
      return verify(null, Buffer.from(message, 'utf8'), this.publicKey, Buffer.from(signature, 'base64'));
    } catch {
      return false;
    }
  }
}

/** sha256 of the SPKI public key, first 128 bits, as eight dash-separated groups of four hex digits. */
export function fingerprintOf(publicKey: KeyObject): string {
  const hex = createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 32);
  return hex.match(/.{4}/g)!.join('-');
}

/** Loads the install's identity, creating it on first start (race-safe across processes). */
export async function ensureIdentity(repo: InstallRepo, cipher: SecretCipher, clock: Clock): Promise<InstallIdentity> {
  if ((await repo.get()) === null) {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    await repo.insertIfAbsent({
      fingerprint: fingerprintOf(publicKey),
      signing_public_key: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      signing_private_key: cipher.encrypt(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()),
      admin_token_hash: null,
      mode: 'setup',
      trial_redeemed_at: null,
      created_at: clock.now().toISOString(),
    });
  }
  const identity = await loadIdentity(repo, cipher);
  if (identity === null) throw new Error('install row vanished while starting');
  return identity;
}

/**
 * Reads the identity without creating anything (CLI). The public key is derived from the
 * decrypted private key, never trusted from the table; a fingerprint that no longer matches the
 * key is refused.
 */
export async function loadIdentity(repo: InstallRepo, cipher: SecretCipher): Promise<InstallIdentity | null> {
  const row = await repo.get();
  if (row === null) return null;
  const privateKey = createPrivateKey(cipher.decrypt(row.signing_private_key));
  const identity = new InstallIdentity(privateKey, createPublicKey(privateKey));
  if (identity.fingerprint !== row.fingerprint) throw new Error('the stored fingerprint does not match the install key');
  return identity;
}

/** The install row on a database opened outside the service (the CLI): null before the first start. */
export function readInstall(db: Db): Promise<InstallRow | null> {
  return new InstallRepo(db).get();
}

/** Whether the service has ever started on a database opened outside it (the CLI), creating nothing. */
export async function installed(db: Db): Promise<boolean> {
  return (await db.schema.hasTable('install')) && (await readInstall(db)) !== null;
}

/** `loadIdentity` on a database opened outside the service (backup, restore, the CLI): the install area's own repo reads it. */
export async function readIdentity(db: Db, cipher: SecretCipher): Promise<InstallIdentity | null> {
  return loadIdentity(new InstallRepo(db), cipher);
}
