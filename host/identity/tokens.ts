import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Install } from '../install/install.ts';

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Constant-time equality of two hex digests of equal length. */
function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A new 256-bit token, base64url. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The two machine tokens. Only digests are held: the admin token's comes from
 * SERVICE_ADMIN_TOKEN or from the install row (generated at first start); the ingest token's
 * from SERVICE_INGEST_TOKEN, and without it ingest is disabled.
 */
export class MachineTokens {
  readonly #adminDigest: string;
  readonly #ingestDigest: string | null;

  constructor(adminDigest: string, ingestDigest: string | null) {
    this.#adminDigest = adminDigest;
    this.#ingestDigest = ingestDigest;
  }

  get ingestEnabled(): boolean {
    return this.#ingestDigest !== null;
  }

  isAdmin(token: string): boolean {
    return sameDigest(sha256Hex(token), this.#adminDigest);
  }

  isIngest(token: string): boolean {
    return this.#ingestDigest !== null && sameDigest(sha256Hex(token), this.#ingestDigest);
  }
}

/**
 * Settles the admin token at start. With SERVICE_ADMIN_TOKEN set, that is it. Otherwise the
 * first start generates one, stores only its hash, and hands the token back once so main can
 * print it; every later start (or a losing racer) gets `printOnce: null`. Without `create` (the
 * CLI's build) nothing is stored: the stored hash is read, and without one no admin token passes.
 */
export async function settleMachineTokens(
  config: Pick<Config, 'adminToken' | 'ingestToken'>,
  repo: Pick<Install, 'get' | 'setAdminTokenHashIfUnset'>,
  opts: { create: boolean } = { create: true },
): Promise<{ tokens: MachineTokens; printOnce: string | null }> {
  const ingest = config.ingestToken === null ? null : sha256Hex(config.ingestToken);
  if (config.adminToken !== null) return { tokens: new MachineTokens(sha256Hex(config.adminToken), ingest), printOnce: null };
  if (!opts.create) return { tokens: new MachineTokens((await repo.get())?.admin_token_hash ?? '', ingest), printOnce: null };
  let printOnce: string | null = null;
  const candidate = newToken();
  if (await repo.setAdminTokenHashIfUnset(sha256Hex(candidate))) printOnce = candidate;
  const row = await repo.get();
  if (row?.admin_token_hash == null) throw new Error('admin token hash missing after start');
  return { tokens: new MachineTokens(row.admin_token_hash, ingest), printOnce };
}
