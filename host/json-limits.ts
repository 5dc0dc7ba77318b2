import { AppError } from './errors.ts';

/** Objects and arrays may nest this deep in any body, and so in anything stored from one. */
export const MAX_JSON_DEPTH = 32;

/**
 * Refuses a parsed JSON value that the service could not store and give back byte for byte:
 * nesting past 32 levels, a string or key that is not well-formed Unicode (a lone surrogate
 * would be stored as U+FFFD and break the ledger's hash), or a `__proto__` key (dropped by
 * object spreads downstream, which would silently change what the caller sent). Throws 400
 * `invalid_body` naming where. No input can exhaust the stack: the walk stops at that depth.
 */
export function checkJsonValue(value: unknown, where: string): void {
  const problem = findProblem(value);
  if (problem !== null) throw new AppError('invalid_body', `${problem.path === '' ? where : `${where}.${problem.path}`}: ${problem.message}`);
}

/** A problem found, with the keys from it up to the top (the nearest first). */
interface Found {
  keys: Array<string | number>;
  message: string;
}

const LONE_SURROGATE = 'is not well-formed Unicode (a lone surrogate)';

/**
 * The first problem in `value`, with where it is. The walk is depth first and visits the last
 * key's (or element's) subtree first; an object's keys are checked before any of its values.
 * The recursion is bounded: nothing deeper than MAX_JSON_DEPTH is entered. The path is spelled
 * out only for the value that has a problem.
 */
export function findProblem(value: unknown): { path: string; message: string } | null {
  const found = visit(value, 0);
  if (found === null) return null;
  let path = '';
  for (let i = found.keys.length - 1; i >= 0; i--) path = join(path, String(found.keys[i]));
  return { path, message: found.message };
}

function visit(v: unknown, depth: number): Found | null {
  if (typeof v === 'string') return v.isWellFormed() ? null : { keys: [], message: LONE_SURROGATE };
  if (v === null || typeof v !== 'object') return null;
  if (depth >= MAX_JSON_DEPTH) return { keys: [], message: `nests deeper than ${MAX_JSON_DEPTH} levels` };
  if (Array.isArray(v)) {
    for (let i = v.length - 1; i >= 0; i--) {
      const found = child(v[i], depth, i);
      if (found !== null) return found;
    }
    return null;
  }
  const keys = Object.keys(v);
  for (const key of keys) {
    if (!key.isWellFormed()) return { keys: [key.toWellFormed()], message: 'the key is not well-formed Unicode (a lone surrogate)' };
    if (key === '__proto__') return { keys: [key], message: 'a key named __proto__ is not accepted' };
  }
  for (let i = keys.length - 1; i >= 0; i--) {
    const key = keys[i]!;
    const found = child((v as Record<string, unknown>)[key], depth, key);
    if (found !== null) return found;
  }
  return null;
}

/** A value under `key`: strings and other scalars checked here, objects and arrays visited. */
function child(x: unknown, depth: number, key: string | number): Found | null {
  if (typeof x === 'string') return x.isWellFormed() ? null : { keys: [key], message: LONE_SURROGATE };
  if (x === null || typeof x !== 'object') return null;
  const found = visit(x, depth + 1);
  if (found !== null) found.keys.push(key);
  return found;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}
