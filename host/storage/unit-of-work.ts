import { dialect, type Db, type Trx } from './db.ts';

export interface UnitOptions {
  /**
   * MySQL only: run in READ COMMITTED, so each read sees what is committed when it runs (a count
   * taken after a lock sees every row its holder before added). SQLite has one writer and ignores it.
   */
  readCommitted?: boolean;
}

/**
 * The one way a service runs a unit of work across repos: `run(fn)` opens a transaction, hands
 * `fn` the transaction to pass to each repo method, commits when `fn` resolves and rolls back
 * when it throws. No service takes the database handle off a repo; repos take the transaction
 * as an argument (or run alone on their own handle when given none).
 */
export class UnitOfWork {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  get dialect(): 'mysql' | 'sqlite' {
    return dialect(this.#db);
  }

  run<T>(fn: (trx: Trx) => Promise<T>, opts: UnitOptions = {}): Promise<T> {
    const config = opts.readCommitted === true && this.dialect === 'mysql' ? { isolationLevel: 'read committed' as const } : undefined;
    return this.#db.transaction(fn, config);
  }
}
