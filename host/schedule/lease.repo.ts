import { dialect, type Db } from '../storage/db.ts';
import type { Lease, Leases } from './lease.model.ts';

/**
 * Leases of scheduled work, the only code that touches `leases`. A lease is taken with ONE
 * conditional statement (an insert that, on a name already present, takes the row over only
 * when it has expired or is already the caller's), so of several host processes racing for it
 * exactly one wins, on SQLite and on MySQL/MariaDB alike. Expiry is decided by the time the
 * caller passes: its lease clock (storage/database-clock.ts: the service's clock, on MySQL moved
 * to the database's time, so that every host judges by one clock).
 */
export class LeaseRepo implements Leases {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Takes `name` for `holder` until `nowMs + ttlMs`: succeeds when the lease is free, expired
   * (`until_ms <= nowMs`) or already held by `holder` (then it is extended).
   */
  async take(name: string, holder: string, ttlMs: number, nowMs: number): Promise<boolean> {
    const until = nowMs + Math.max(1, Math.round(ttlMs));
    if (dialect(this.#db) === 'sqlite') {
      await this.#db.raw(
        `insert into leases (name, holder, until_ms) values (?, ?, ?)
         on conflict (name) do update set holder = excluded.holder, until_ms = excluded.until_ms
         where leases.until_ms <= ? or leases.holder = excluded.holder`,
        [name, holder, until, nowMs],
      );
    } else {
      // MySQL assigns left to right: `holder` changes only when the lease may be taken, and
      // `until_ms` then follows exactly when the holder is (now) the caller.
      await this.#db.raw(
        `insert into leases (name, holder, until_ms) values (?, ?, ?)
         on duplicate key update holder = if(until_ms <= ? or holder = ?, ?, holder), until_ms = if(holder = ?, ?, until_ms)`,
        [name, holder, until, nowMs, holder, holder, holder, until],
      );
    }
    const row = await this.get(name);
    return row !== null && row.holder === holder && row.until_ms === until;
  }

  /** Gives a lease back early (only the holder can); the next taker need not wait for expiry. */
  async release(name: string, holder: string): Promise<void> {
    await this.#db('leases').where({ name, holder }).update({ until_ms: 0 });
  }

  /**
   * Gives back every lease these holders (one host process's) hold, at shutdown, or every
   * holder's (null: at the start of the only host process on SQLite): the next taker need not
   * wait for them to run out.
   */
  async releaseAll(holders: readonly string[] | null): Promise<number> {
    const q = this.#db('leases').where('until_ms', '>', 0);
    return Number(await (holders === null ? q : q.whereIn('holder', holders)).update({ until_ms: 0 }));
  }

  /** The names of the leases these holders (one host process's) hold at `nowMs` (GET /metrics: what this host is doing). */
  async heldBy(holders: readonly string[], nowMs: number): Promise<string[]> {
    return ((await this.#db('leases').select('name').whereIn('holder', holders).andWhere('until_ms', '>', nowMs)) as Array<{ name: string }>).map(
      (r) => r.name,
    );
  }

  /** Every lease some holder still holds at `nowMs` (oncall restore: is a host running on this database?). */
  async live(nowMs: number): Promise<Lease[]> {
    const rows = (await this.#db('leases').select('name', 'holder', 'until_ms').where('until_ms', '>', nowMs)) as Array<{
      name: string;
      holder: string;
      until_ms: number | string;
    }>;
    return rows.map((r) => ({ name: r.name, holder: r.holder, until_ms: Number(r.until_ms) }));
  }

  async get(name: string): Promise<Lease | null> {
    const r = (await this.#db('leases').where({ name }).first()) as { name: string; holder: string; until_ms: number | string } | undefined;
    return r === undefined ? null : { name: r.name, holder: r.holder, until_ms: Number(r.until_ms) };
  }
}
