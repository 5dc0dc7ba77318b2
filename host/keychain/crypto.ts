import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  randomBytes,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';
import { fingerprintOf } from '../install/identity.ts';
import { canonicalJson } from '../ledger/entry.ts';
import type { SecretCipher } from '../secrets/cipher.ts';

/**
 * The keychain's cryptography, all from `node:crypto`:
 * - signatures: Ed25519 over `oncall-keychain:v1:` + the RFC 8785 JSON of a payload (the
 *   keychain's key signs what the home says, an install's identity key what the install says);
 * - sealing to an install: X25519 with an ephemeral key, HKDF-SHA256, AES-256-GCM (the content
 *   key to a new member, a site key's secret to the home);
 * - bundles: AES-256-GCM under the content key, bound to keychain, part, epoch and version.
 * Public keys travel as their 32 raw bytes in base64url.
 */

const DOMAIN = 'oncall-keychain:v1:';

export type Ed25519Pair = { publicKey: KeyObject; privateKey: KeyObject };

export function newSigningKey(): Ed25519Pair {
  return generateKeyPairSync('ed25519');
}

export function newBoxKey(): Ed25519Pair {
  return generateKeyPairSync('x25519');
}

/** The 32 raw bytes of an Ed25519 or X25519 public key, base64url. */
export function rawPublic(key: KeyObject): string {
  const jwk = key.export({ format: 'jwk' });
  if (typeof jwk.x !== 'string') throw new Error('not an OKP public key');
  return jwk.x;
}

const RAW = /^[A-Za-z0-9_-]{43}$/;

/** A public key from its raw form; throws on anything that is not 32 bytes of base64url. */
export function publicFrom(raw: string, curve: 'Ed25519' | 'X25519'): KeyObject {
  if (!RAW.test(raw)) throw new Error('a public key is 32 bytes of base64url');
  return createPublicKey({ key: { kty: 'OKP', crv: curve, x: raw }, format: 'jwk' });
}

/** The fingerprint of an Ed25519 key given raw: the install fingerprint's form (install/identity.ts). */
export function fingerprintOfRaw(raw: string): string {
  return fingerprintOf(publicFrom(raw, 'Ed25519'));
}

/** A private key sealed at rest with the install's secret key, and back. */
export function sealPrivate(cipher: SecretCipher, key: KeyObject): string {
  return cipher.encrypt(key.export({ type: 'pkcs8', format: 'pem' }).toString());
}

export function openPrivate(cipher: SecretCipher, sealed: string): KeyObject {
  return createPrivateKey(cipher.decrypt(sealed));
}

/** What is signed for a payload: the domain, then its canonical JSON. */
export function signedText(payload: unknown): string {
  return DOMAIN + canonicalJson(payload);
}

export function signWith(privateKey: KeyObject, payload: unknown): string {
  return sign(null, Buffer.from(signedText(payload), 'utf8'), privateKey).toString('base64');
}

/** Whether `signature` is `publicKey`'s over `payload`; never throws. */
export function verifyWith(publicKey: KeyObject, payload: unknown, signature: unknown): boolean {
  if (typeof signature !== 'string' || signature.length > 200) return false;
  try {
    return verify(null, Buffer.from(signedText(payload), 'utf8'), publicKey, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}

/** AES-256-GCM output, base64url. */
export interface Encrypted {
  iv: string;
  tag: string;
  ct: string;
}

/** Sealed to one recipient's X25519 key: the ephemeral public key beside the ciphertext. */
export interface Sealed extends Encrypted {
  epk: string;
}

export function encrypt(key: Buffer, plain: Buffer, aad: string): Encrypted {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([c.update(plain), c.final()]);
  return { iv: iv.toString('base64url'), tag: c.getAuthTag().toString('base64url'), ct: ct.toString('base64url') };
}

/** Throws when the ciphertext, its tag or the associated data do not match. */
export function decrypt(key: Buffer, e: Encrypted, aad: string): Buffer {
  const d = createDecipheriv('aes-256-gcm', key, Buffer.from(e.iv, 'base64url'));
  d.setAAD(Buffer.from(aad, 'utf8'));
  d.setAuthTag(Buffer.from(e.tag, 'base64url'));
  return Buffer.concat([d.update(Buffer.from(e.ct, 'base64url')), d.final()]);
}

function boxKey(shared: Buffer, epk: string, recipient: string, context: string): Buffer {
  return Buffer.from(hkdfSync('sha256', shared, Buffer.from(epk + recipient, 'utf8'), `${DOMAIN}seal:${context}`, 32));
}

/** Seals `plain` so that only the holder of `recipient`'s private key opens it, for `context` only. */
export function sealTo(recipient: KeyObject, plain: Buffer, context: string): Sealed {
  const eph = newBoxKey();
  const epk = rawPublic(eph.publicKey);
  const shared = diffieHellman({ privateKey: eph.privateKey, publicKey: recipient });
  const key = boxKey(shared, epk, rawPublic(recipient), context);
  return { epk, ...encrypt(key, plain, context) };
}

/** Opens what `sealTo` sealed to this key for `context`; throws when it was not. */
export function openSealed(privateKey: KeyObject, sealed: Sealed, context: string): Buffer {
  const shared = diffieHellman({ privateKey, publicKey: publicFrom(sealed.epk, 'X25519') });
  const key = boxKey(shared, sealed.epk, rawPublic(createPublicKey(privateKey)), context);
  return decrypt(key, sealed, context);
}

/** HMAC-SHA256 of a part's settings under the content key: equal settings, equal digest; nothing of them readable. */
export function digestOf(contentKey: Buffer, data: unknown): string {
  return createHmac('sha256', contentKey).update(canonicalJson(data)).digest('hex');
}

export function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

export function randomToken(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}
