import { dialect, type Db, type Trx } from './db.ts';
import { isDeadlock } from './failures.ts';

/**
 * A transaction InnoDB ended in a deadlock is run again, this many times in all: each deadlock
 * ends one of the transactions at once, so a retry soon wins.
 */
const DEADLOCK_TRIES = 5;

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
 *
 * On MySQL, a transaction InnoDB ends in a deadlock (rolled back whole) is run again from the
 * start: `fn` must leave nothing behind outside the transaction that a second run would double
 * (set what it computes; never count or append to what outlives it).
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
    return this.#retried(() => this.#db.transaction(fn, config));
  }

  async #retried<T>(once: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await once();
      } catch (e) {
        if (!isDeadlock(e) || attempt === DEADLOCK_TRIES) throw e;
      }
    }
  }
}
