import { keysOf, type Pointer } from './settings-schema.ts';

/**
 * Write-only settings: taking them out of a settings object, putting them back, and the masked
 * form listings show. A secret is any field its kind's schema marks `"writeOnly": true`.
 */

type Obj = Record<string, unknown>;

/** How a secret appears in every answer: whether it is set, never its value. */
export interface MaskedSecret {
  set: boolean;
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A deep copy of plain JSON. */
export const clone = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));

export function getAt(obj: Obj, p: Pointer): unknown {
  let cur: unknown = obj;
  for (const k of keysOf(p)) {
    if (!isObj(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

/** Sets (or, with `undefined`, deletes) the field; parents are created as needed. */
export function setAt(obj: Obj, p: Pointer, value: unknown): void {
  const keys = keysOf(p);
  let cur: Obj = obj;
  for (const k of keys.slice(0, -1)) {
    if (!isObj(cur[k])) {
      if (value === undefined) return;
      cur[k] = {};
    }
    cur = cur[k] as Obj;
  }
  const last = keys[keys.length - 1]!;
  if (value === undefined) delete cur[last];
  else cur[last] = value;
}

/** Whether the parent object of the field exists (top-level fields always have one). */
function parentExists(obj: Obj, p: Pointer): boolean {
  const keys = keysOf(p);
  return (
    keys.length === 1 ||
    isObj(
      getAt(
        obj,
        '/' +
          keys
            .slice(0, -1)
            .map((k) => k.replaceAll('~', '~0').replaceAll('/', '~1'))
            .join('/'),
      ),
    )
  );
}

/** What a caller gave for a secret on update. */
export type SecretInput = { keep: true } | { clear: true } | { value: unknown };

/**
 * Reads a secret field of an update: omitted, `""`, or the masked form `{"set": ...}` (a listing
 * sent back as it was) keep the stored value; `null` clears it; anything else replaces it.
 */
export function secretInput(given: unknown): SecretInput {
  if (given === undefined || given === '') return { keep: true };
  if (given === null) return { clear: true };
  if (isObj(given) && Object.keys(given).length === 1 && typeof given.set === 'boolean') return { keep: true };
  return { value: given };
}

/** The settings with the secrets taken out, and the secrets by pointer. */
export function splitSecrets(settings: Obj, pointers: Pointer[]): { plain: Obj; secrets: Map<Pointer, unknown> } {
  const plain = clone(settings);
  const secrets = new Map<Pointer, unknown>();
  for (const p of pointers) {
    const v = getAt(plain, p);
    if (v !== undefined) secrets.set(p, v);
    setAt(plain, p, undefined);
  }
  return { plain, secrets };
}

/** `plain` with each secret put back at its pointer. */
export function joinSecrets(plain: Obj, secrets: Map<Pointer, unknown>): Obj {
  const out = clone(plain);
  for (const [p, v] of secrets) setAt(out, p, v);
  return out;
}

/** The settings as answers show them: each secret field `{"set": true|false}`. */
export function maskSecrets(plain: Obj, pointers: Pointer[], isSet: (p: Pointer) => boolean): Obj {
  const out = clone(plain);
  for (const p of pointers) {
    setAt(out, p, undefined);
    const set = isSet(p);
    if (set || parentExists(out, p)) setAt(out, p, { set } satisfies MaskedSecret);
  }
  return out;
}

/** Every string inside a secret value (a secret may be an object of several), for scrubbing. */
export function secretStrings(secrets: Iterable<unknown>): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      if (v.length >= 4) out.push(v);
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (isObj(v)) Object.values(v).forEach(walk);
  };
  for (const s of secrets) walk(s);
  // Longest first, so a secret containing another is blanked whole.
  return [...new Set(out)].sort((a, b) => b.length - a.length);
}

// The scrubbing itself lives below every area (host/scrub.ts): the plugin HTTP client and the
// investigation's evidence use it too.
export { REDACTED, scrubJson, scrubText } from '../scrub.ts';
