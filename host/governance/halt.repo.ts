import { dialect, type Db, type Trx } from '../storage/db.ts';

export interface HaltState {
  halted: boolean;
  by: string | null;
  reason: string | null;
  at: string | null;
}

interface Row {
  halted: number | boolean;
  by: string | null;
  reason: string | null;
  at: string | null;
}
const fromRow = (r: Row | undefined): HaltState =>
  r === undefined ? { halted: false, by: null, reason: null, at: null } : { halted: Boolean(r.halted), by: r.by, reason: r.reason, at: r.at };

/**
 * The only code that touches `halt_switch` (one row, id 1). Read from the database on every
 * check, never cached, so every host process sees a halt at its next check.
 */
export class HaltRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async read(): Promise<HaltState> {
    return fromRow((await this.#db('halt_switch').select('halted', 'by', 'reason', 'at').where({ id: 1 }).first()) as Row | undefined);
  }

  /**
   * The switch inside `trx`. On MySQL `share` takes a shared lock (an action running in `trx`
   * holds off a halt until it commits; a halt in progress holds off the action), else an
   * exclusive one for a change of the switch.
   */
  async readIn(trx: Trx, mode: 'share' | 'update'): Promise<HaltState> {
    const q = trx('halt_switch').select('halted', 'by', 'reason', 'at').where({ id: 1 });
    const locked = dialect(this.#db) !== 'mysql' ? q : mode === 'share' ? q.forShare() : q.forUpdate();
    return fromRow((await locked.first()) as Row | undefined);
  }

  async write(trx: Trx, state: HaltState): Promise<void> {
    await trx('halt_switch')
      .insert({ id: 1, ...state })
      .onConflict('id')
      .merge();
  }
}
