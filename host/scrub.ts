/** Secrets blanked out of text and JSON that leaves a connector call (answers, errors, evidence, logs). */

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const REDACTED = '[redacted]';

/** `text` with every occurrence of a secret replaced; also the base64 form (basic auth). */
export function scrubText(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) {
    out = out.split(s).join(REDACTED);
    const b64 = Buffer.from(s, 'utf8').toString('base64').replace(/=+$/, '');
    if (b64.length >= 4) out = out.split(b64).join(REDACTED);
  }
  return out;
}

/** A JSON value with every string scrubbed of secrets (keys too). */
export function scrubJson(value: unknown, secrets: string[]): unknown {
  if (secrets.length === 0) return value;
  if (typeof value === 'string') return scrubText(value, secrets);
  if (Array.isArray(value)) return value.map((v) => scrubJson(v, secrets));
  if (isObj(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [scrubText(k, secrets), scrubJson(v, secrets)]));
  return value;
}
