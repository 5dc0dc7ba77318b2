import { AppError } from '../errors.ts';
import { DIGEST_MAX_DAYS, DIGEST_MIN_DAYS } from './digest.ts';

/** `days`: a whole number from 1 to 90, 1 when absent; anything else is 400 naming the limit. */
export function parseDays(v: string | null | undefined): number {
  if (v === null || v === undefined || v === '') return DIGEST_MIN_DAYS;
  const n = /^\d{1,3}$/.test(v) ? Number(v) : NaN;
  if (!Number.isInteger(n) || n < DIGEST_MIN_DAYS || n > DIGEST_MAX_DAYS)
    throw new AppError('invalid_parameter', `days must be a whole number from ${DIGEST_MIN_DAYS} to ${DIGEST_MAX_DAYS}`);
  return n;
}
