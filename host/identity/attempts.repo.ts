import type { Db, Trx } from '../storage/db.ts';

/**
 * The only code that touches `auth_attempts`: one row per counted attempt (a code asked for, a
 * wrong password, ...), by kind and subject (an address or a client), so that every limit is a
 * count over a window of the injected clock and holds across host processes.
 */
export class AttemptsRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async add(q: Trx | null, kind: string, subject: string, atMs: number): Promise<void> {
    await (q ?? this.#db)('auth_attempts').insert({ kind, subject, at_ms: atMs });
  }

  /** How many since `sinceMs`, and the oldest of them (for Retry-After). */
  async since(q: Trx | null, kind: string, subject: string, sinceMs: number): Promise<{ count: number; oldest: number | null }> {
    const row = (await (q ?? this.#db)('auth_attempts')
      .count({ n: '*' })
      .min({ oldest: 'at_ms' })
      .where({ kind, subject })
      .andWhere('at_ms', '>=', sinceMs)
      .first()) as { n: number | string; oldest: number | string | null } | undefined;
    return { count: Number(row?.n ?? 0), oldest: row?.oldest == null ? null : Number(row.oldest) };
  }

  async clear(q: Trx | null, kind: string, subject: string): Promise<void> {
    await (q ?? this.#db)('auth_attempts').where({ kind, subject }).delete();
  }

  async prune(beforeMs: number): Promise<number> {
    return this.#db('auth_attempts').where('at_ms', '<', beforeMs).delete();
  }
}
