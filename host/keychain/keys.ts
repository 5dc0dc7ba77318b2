import type { KeyObject } from 'node:crypto';
import { AppError } from '../errors.ts';
import type { InstallIdentity } from '../install/identity.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import { VERSION } from '../version.ts';
import { openPrivate, publicFrom, rawPublic, signedText } from './crypto.ts';
import type { InstallRef, KeychainState } from './state.repo.ts';

/**
 * The keys of this install's place in the keychain, opened from the sealed row only when used
 * and never kept: the content key, the keychain's signing key (the home only), this install's box
 * key; and this install's identity key, which signs what it says to the others.
 */
export class KeyRing {
  readonly #cipher: SecretCipher;
  readonly #identity: InstallIdentity;

  constructor(deps: { cipher: SecretCipher; identity: InstallIdentity }) {
    this.#cipher = deps.cipher;
    this.#identity = deps.identity;
  }

  get fingerprint(): string {
    return this.#identity.fingerprint;
  }

  /** This install's identity key, raw. */
  get installKey(): string {
    return rawPublic(this.#identity.publicKey);
  }

  contentKey(s: Pick<KeychainState, 'content_key'>): Buffer {
    return Buffer.from(this.#cipher.decrypt(s.content_key), 'base64');
  }

  sealContentKey(key: Buffer): string {
    return this.#cipher.encrypt(key.toString('base64'));
  }

  /** The keychain's signing key: only the home holds it. */
  signing(s: Pick<KeychainState, 'sign_private'>): KeyObject {
    if (s.sign_private === null) throw new AppError('keychain_not_home', 'only the home signs for the keychain');
    return openPrivate(this.#cipher, s.sign_private);
  }

  seal(key: KeyObject): string {
    return this.#cipher.encrypt(key.export({ type: 'pkcs8', format: 'pem' }).toString());
  }

  box(s: Pick<KeychainState, 'box_private'>): KeyObject {
    return openPrivate(this.#cipher, s.box_private);
  }

  signPublic(s: Pick<KeychainState, 'sign_key'>): KeyObject {
    return publicFrom(s.sign_key, 'Ed25519');
  }

  /** This install's signature (its identity key) over a payload. */
  signAsInstall(payload: unknown): string {
    return this.#identity.sign(signedText(payload));
  }

  /** This install as the others know it. */
  self(s: Pick<KeychainState, 'name' | 'box_key' | 'address'>): InstallRef {
    return { name: s.name, fingerprint: this.fingerprint, install_key: this.installKey, box_key: s.box_key, address: s.address, version: VERSION };
  }
}
