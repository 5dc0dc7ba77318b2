import type { Request } from 'restify';
import { AppError } from '../errors.ts';

/** Query parameters, parsed by hand since restify's queryParser is not mounted: one value each. */
export function queryOf(req: Request): URLSearchParams {
  return new URL(req.url ?? '/', 'http://localhost').searchParams;
}

export function optionalText(q: URLSearchParams, name: string, max = 500): string | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (v.length > max) throw new AppError('invalid_parameter', `${name} must be at most ${max} characters`);
  return v;
}

/** A whole number ≥ min, or undefined when absent; anything else is 400 naming the parameter. */
export function optionalInt(q: URLSearchParams, name: string, min = 0): number | undefined {
  const v = q.get(name);
  if (v === null || v === '') return undefined;
  if (!/^\d{1,15}$/.test(v) || Number(v) < min) throw new AppError('invalid_parameter', `${name} must be a whole number of at least ${min}`);
  return Number(v);
}

/** A page size: any whole number of at least 1, clamped to `max` (a huge one is not an error, as
 * for every page limit of the API); the default when absent. */
export function pageLimit(q: URLSearchParams, fallback: number, max: number): number {
  const v = q.get('limit');
  if (v === null || v === '') return fallback;
  if (!/^\d+$/.test(v) || /^0+$/.test(v)) throw new AppError('invalid_parameter', 'limit must be a whole number of at least 1');
  return v.replace(/^0+/, '').length > 15 ? max : Math.min(Number(v), max);
}
