import { MAX_JSON_DEPTH } from '../json-limits.ts';

/**
 * The ledger never holds a secret. Whatever a caller puts in `data`, values under keys that name
 * a secret are replaced before hashing, so a careless caller cannot write one into the chain.
 */
const SECRET_KEY =
  /^(authorization|password|passwd|passphrase|secret|token|api_?key|private_?key|access_token|refresh_token|id_token|client_secret|cookie|otp|code)$|(_password|_secret|_token|_api_?key|_private_?key)$/i;

export const REDACTED = '[redacted]';

/**
 * Nothing deeper than MAX_JSON_DEPTH can be appended (the ledger refuses it first); should a
 * deeper value ever reach this, it is blanked whole rather than passed through unredacted.
 */
export function redactSecrets(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth > MAX_JSON_DEPTH) return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY.test(k) ? REDACTED : redactSecrets(v, depth + 1);
  return out;
}
