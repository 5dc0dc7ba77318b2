import { AppError } from './errors.ts';

/** Objects and arrays may nest this deep in any body, and so in anything stored from one. */
export const MAX_JSON_DEPTH = 32;

/**
 * Refuses a parsed JSON value that the service could not store and give back byte for byte:
 * nesting past 32 levels, a string or key that is not well-formed Unicode (a lone surrogate
 * would be stored as U+FFFD and break the ledger's hash), or a `__proto__` key (dropped by
 * object spreads downstream, which would silently change what the caller sent). Throws 400
 * `invalid_body` naming where. Iterative, so no input can exhaust the stack.
 */
export function checkJsonValue(value: unknown, where: string): void {
  const problem = findProblem(value);
  if (problem !== null) throw new AppError('invalid_body', `${problem.path === '' ? where : `${where}.${problem.path}`}: ${problem.message}`);
}

export function findProblem(value: unknown): { path: string; message: string } | null {
  const stack: Array<{ v: unknown; depth: number; path: string }> = [{ v: value, depth: 0, path: '' }];
  while (stack.length > 0) {
    const { v, depth, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (!v.isWellFormed()) return { path, message: 'is not well-formed Unicode (a lone surrogate)' };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) return { path, message: `nests deeper than ${MAX_JSON_DEPTH} levels` };
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push({ v: v[i], depth: depth + 1, path: join(path, String(i)) });
      continue;
    }
    for (const key of Object.keys(v)) {
      const at = join(path, key.isWellFormed() ? key : key.toWellFormed());
      if (!key.isWellFormed()) return { path: at, message: 'the key is not well-formed Unicode (a lone surrogate)' };
      if (key === '__proto__') return { path: at, message: 'a key named __proto__ is not accepted' };
      stack.push({ v: (v as Record<string, unknown>)[key], depth: depth + 1, path: at });
    }
  }
  return null;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}
