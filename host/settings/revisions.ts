import { AppError } from '../errors.ts';
import type { Trx } from '../storage/db.ts';
import type { SettingsStore } from './settings.model.ts';

/**
 * Round trips of settings documents: what a GET answers, a PUT accepts back unchanged, so a
 * script can read, change one field and write back. The fields a GET adds that are not the
 * document (these, and each document's own, such as a secret's `*_set`) are ignored in a PUT,
 * except `version`: a version other than the stored one (someone changed it since it was read)
 * answers 409 `version_conflict` (the policy keeps its documented `policy_version_conflict`).
 */
export const READ_ONLY_FIELDS = ['version', 'source', 'updated_at', 'updated_by'] as const;

/** Who last changed a document and its version; 0 (and nulls) before the first change. */
export interface Revision {
  version: number;
  updated_at: string | null;
  updated_by: string | null;
}

export const NO_REVISION: Readonly<Revision> = Object.freeze({ version: 0, updated_at: null, updated_by: null });

/**
 * A PUT body as the document it changes, and the version the caller read (null: none given,
 * the change applies to whatever is stored). Anything that is not an object is handed on as it
 * is, for the document's own validation to refuse.
 */
export function takeBack(body: unknown, extra: readonly string[] = []): { doc: unknown; version: number | null } {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return { doc: body, version: null };
  const given = (body as { version?: unknown }).version;
  if (given !== undefined && given !== null && !(Number.isSafeInteger(given) && (given as number) >= 0)) {
    throw new AppError('invalid_body', 'version must be the whole number a GET answered');
  }
  const drop = new Set<string>([...READ_ONLY_FIELDS, ...extra]);
  const doc = Object.fromEntries(Object.entries(body).filter(([k]) => !drop.has(k)));
  return { doc, version: typeof given === 'number' ? given : null };
}

/** 409 when the caller read another version than the stored one. */
export function checkVersion(
  expected: number | null,
  stored: number,
  what: string,
  code: 'version_conflict' | 'policy_version_conflict' = 'version_conflict',
): void {
  if (expected !== null && expected !== stored) {
    throw new AppError(code, `${what} is at version ${stored}, not ${expected}: read it again and reapply the change`);
  }
}

/**
 * The revision of a settings document, kept beside it in the `settings` table (row
 * `<name>:revision`), for documents whose own row has no room for it.
 */
export class Revisions {
  readonly #settings: SettingsStore;

  constructor(settings: SettingsStore) {
    this.#settings = settings;
  }

  async get(name: string, trx?: Trx): Promise<Revision> {
    return (await this.#settings.get<Revision>(`${name}:revision`, trx)) ?? { ...NO_REVISION };
  }

  /** The next version, by `actor` at `at`; call it in the transaction that changes the document. */
  async bump(trx: Trx, name: string, actor: string, at: string): Promise<Revision> {
    const next: Revision = { version: (await this.get(name, trx)).version + 1, updated_at: at, updated_by: actor };
    await this.#settings.put(trx, `${name}:revision`, next, at);
    return next;
  }
}
