import { dialect, type Db, type Trx } from '../storage/db.ts';

/** A heartbeat as stored. */
export interface Heartbeat {
  source: string;
  name: string;
  last_seen_ms: number;
  interval_ms: number | null;
  state: 'alive' | 'missing';
  missing_since_ms: number | null;
}

type Row = {
  [K in keyof Heartbeat]: Heartbeat[K] extends number ? number | string : Heartbeat[K] extends number | null ? number | string | null : Heartbeat[K];
};

const fromRow = (r: Row): Heartbeat => ({
  source: r.source,
  name: r.name,
  last_seen_ms: Number(r.last_seen_ms),
  interval_ms: r.interval_ms === null ? null : Number(r.interval_ms),
  state: r.state,
  missing_since_ms: r.missing_since_ms === null ? null : Number(r.missing_since_ms),
});

/** The only code that touches `heartbeats`. */
export class HeartbeatsRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** The heartbeat of `source`/`name`, locked on MySQL for the rest of `trx`. */
  async lock(trx: Trx, source: string, name: string): Promise<Heartbeat | null> {
    const q = trx('heartbeats').where({ source, name });
    const row = (await (dialect(trx) === 'mysql' ? q.forUpdate() : q).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }

  async put(trx: Trx, h: Heartbeat): Promise<void> {
    await trx('heartbeats').insert(h).onConflict(['source', 'name']).merge();
  }

  /** Marks a heartbeat missing when it is still alive and last seen at `lastSeenMs`: true for the one caller that did it. */
  async markMissing(trx: Trx, h: Heartbeat, nowMs: number): Promise<boolean> {
    const n = await trx('heartbeats')
      .where({ source: h.source, name: h.name, state: 'alive', last_seen_ms: h.last_seen_ms })
      .update({ state: 'missing', missing_since_ms: nowMs });
    return Number(n) === 1;
  }

  async alive(): Promise<Heartbeat[]> {
    return ((await this.#db('heartbeats').where({ state: 'alive' }).orderBy(['source', 'name'])) as Row[]).map(fromRow);
  }

  async all(): Promise<Heartbeat[]> {
    return ((await this.#db('heartbeats').orderBy(['source', 'name']).limit(500)) as Row[]).map(fromRow);
  }
}
