import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { DAY } from '../clock.ts';
import { AppError } from '../errors.ts';
import { schemaValidator } from '../json-schema.ts';
import { canonicalJson } from '../ledger/entry.ts';

/**
 * A licence: a JSON object signed with Ed25519 over `"licence:v1" + RFC 8785 JSON of the object
 * without its signature`. Paid licences are signed by the vendor; a trial is signed by this
 * install's own key and names this install's fingerprint.
 */
export interface Licence {
  id?: string;
  customer: string;
  tier: 'starter' | 'enterprise' | 'strategic' | 'trial';
  services: number | null;
  installs: number | null;
  features: string[];
  issued_at: string;
  expires_at: string;
  grace_days: number;
  install?: string;
  signature: string;
}

/** `revoked` and `unconfirmed` come only from online confirmation (licence-check.ts). */
export type LicenceState = 'none' | 'valid' | 'grace' | 'expired' | 'invalid' | 'revoked' | 'unconfirmed';

export interface LicenceStatus {
  state: LicenceState;
  customer: string | null;
  tier: Licence['tier'] | null;
  expires_at: string | null;
  in_grace: boolean;
}

/** The vendor's key, built in. SERVICE_LICENCE_PUBKEY adds one (a vendor's second key, or a test's). */
export const VENDOR_PUBLIC_KEY = `-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEA6t3WobfkBfjm0cwdKNMJRKIPZQPZfefMKVIVuGh8dQo=
-----END PUBLIC KEY-----
`;

const DATE = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,3})?Z$';

export const LICENCE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['customer', 'tier', 'services', 'installs', 'features', 'issued_at', 'expires_at', 'grace_days', 'signature'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 100, description: 'the vendor’s reference for this licence' },
    customer: { type: 'string', minLength: 1, maxLength: 200, description: 'who the licence is for' },
    tier: { enum: ['starter', 'enterprise', 'strategic', 'trial'], description: 'licence tier' },
    services: { type: ['integer', 'null'], minimum: 1, description: 'how many services count; null is unlimited' },
    installs: { type: ['integer', 'null'], minimum: 1, description: 'how many installs; null is a site licence' },
    features: { type: 'array', maxItems: 50, items: { type: 'string', maxLength: 50 }, description: 'features switched on' },
    issued_at: { type: 'string', pattern: DATE, description: 'ISO 8601 UTC' },
    expires_at: { type: 'string', pattern: DATE, description: 'ISO 8601 UTC' },
    grace_days: { type: 'integer', minimum: 0, maximum: 90, description: 'days the licence keeps working after it expires' },
    install: { type: 'string', maxLength: 64, description: 'the one install fingerprint this licence binds to, if any' },
    signature: { type: 'string', minLength: 1, maxLength: 200, description: 'Ed25519 signature, base64' },
  },
} as const;

const checkShape = schemaValidator<Licence>(LICENCE_SCHEMA);

export function signedMessage(licence: Omit<Licence, 'signature'> & { signature?: string }): string {
  const { signature: _ignored, ...rest } = licence;
  return `licence:v1${canonicalJson(rest)}`;
}

/** Reads a public key given as PEM, or as base64 of the 32 raw Ed25519 bytes. */
export function parsePublicKey(text: string): KeyObject {
  const t = text.trim();
  if (t.startsWith('-----BEGIN')) return createPublicKey(t);
  const raw = Buffer.from(t, 'base64');
  if (raw.length !== 32) throw new Error('an Ed25519 public key is PEM or 32 bytes of base64');
  return createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]), format: 'der', type: 'spki' });
}

/** Checks shape, signature (against any of `keys`) and the install binding; throws 400 `bad_licence`. */
export function checkLicence(candidate: unknown, keys: KeyObject[], fingerprint: string): Licence {
  let licence: Licence;
  try {
    licence = checkShape(candidate);
  } catch (e) {
    throw new AppError('bad_licence', (e as Error).message);
  }
  const message = Buffer.from(signedMessage(licence), 'utf8');
  const signature = Buffer.from(licence.signature, 'base64');
  const signed = keys.some((k) => {
    try {
      return verify(null, message, k, signature);
    } catch {
      return false;
    }
  });
  if (!signed) throw new AppError('bad_licence', 'the signature does not match any licence key');
  if (Date.parse(licence.expires_at) <= Date.parse(licence.issued_at)) throw new AppError('bad_licence', 'expires_at must be after issued_at');
  if (licence.install !== undefined && licence.install !== fingerprint) throw new AppError('bad_licence', 'this licence is bound to another install');
  return licence;
}

/** Where a licence stands at `now`: valid, then in grace for `grace_days`, then expired. */
export function licenceStatus(licence: Licence | null, now: Date, invalid = false): LicenceStatus {
  if (licence === null) return { state: invalid ? 'invalid' : 'none', customer: null, tier: null, expires_at: null, in_grace: false };
  const expires = Date.parse(licence.expires_at);
  const t = now.getTime();
  const state: LicenceState = t < expires ? 'valid' : t < expires + licence.grace_days * DAY ? 'grace' : 'expired';
  return { state, customer: licence.customer, tier: licence.tier, expires_at: licence.expires_at, in_grace: state === 'grace' };
}

export function isUsable(status: LicenceStatus): boolean {
  return status.state === 'valid' || status.state === 'grace';
}
