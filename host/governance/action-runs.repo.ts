import type { Db, Trx } from '../storage/db.ts';

/** The only code that touches `action_runs`. */
export class ActionRunsRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async add(q: Trx | null, run: { service: string; kind: string; at_ms: number }): Promise<void> {
    await (q ?? this.#db)('action_runs').insert(run);
  }

  async since(q: Trx | null, service: string, sinceMs: number): Promise<number> {
    const row = (await (q ?? this.#db)('action_runs').count({ n: '*' }).where({ service }).andWhere('at_ms', '>', sinceMs).first()) as
      { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }
}
