import { dialect, type Db, type Trx } from '../storage/db.ts';
import { replaceable, type ActionPath } from './paths.model.ts';

const JSON_FIELDS = ['proposal', 'policy_decision', 'rehearsal', 'approvals', 'action', 'verification'] as const;
type Row = Omit<ActionPath, (typeof JSON_FIELDS)[number] | 'due_ms' | 'run'> &
  Record<(typeof JSON_FIELDS)[number], string | null> & { due_ms: number | string; run: number | string };

function fromRow(r: Row): ActionPath {
  const out: Record<string, unknown> = { ...r, due_ms: Number(r.due_ms), run: Number(r.run) };
  for (const f of JSON_FIELDS) out[f] = r[f] === null ? null : (JSON.parse(r[f]) as unknown);
  return out as unknown as ActionPath;
}

/** A path started again as `run`, due at `nowMs`: every step's record cleared, the lease free. */
function startedAgain(run: number, nowMs: number): Record<string, unknown> {
  return {
    run,
    state: 'pending',
    due_ms: nowMs,
    proposal: null,
    policy_decision: null,
    rehearsal: null,
    approval_id: null,
    approvals: null,
    verification: null,
    outcome: null,
    held_by_halt: null,
    lease_holder: null,
    lease_until_ms: null,
    updated_at: new Date(nowMs).toISOString(),
  };
}

/**
 * The acting area's table (`action_paths`), and the only code that touches it. Built below the
 * investigation, whose diagnosis asks for the path in its own transaction.
 */
export class ActionPathsRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Asks for the path of a diagnosed run. A later run (new alerts joined) replaces a path that has
   * not acted yet; once an action was taken (or is being taken) the path is never started again.
   * The caller (ActingService.request) first closes the request a replaced path waited on.
   */
  async request(trx: Trx, episodeId: string, run: number, service: string, nowMs: number): Promise<void> {
    const at = new Date(nowMs).toISOString();
    const existing = (await trx('action_paths').select('state', 'action').where({ episode_id: episodeId }).first()) as
      { state: string; action: string | null } | undefined;
    if (existing === undefined) {
      await trx('action_paths').insert({ episode_id: episodeId, run, service, state: 'pending', due_ms: nowMs, updated_at: at });
      return;
    }
    if (!replaceable(existing)) return;
    await trx('action_paths').where({ episode_id: episodeId }).update(startedAgain(run, nowMs));
  }

  /** The ended paths whose fix the halt held back (`held_by_halt` set), oldest first. */
  async heldByHalt(limit: number): Promise<Array<{ episode_id: string; run: number }>> {
    const rows = (await this.#db('action_paths')
      .select('episode_id', 'run')
      .whereNotNull('held_by_halt')
      .andWhere({ state: 'done' })
      .orderBy('held_by_halt')
      .limit(limit)) as Array<{ episode_id: string; run: number | string }>;
    return rows.map((r) => ({ episode_id: r.episode_id, run: Number(r.run) }));
  }

  /**
   * Starts a held path again as the next run (one conditional update, so of several hosts exactly
   * one does it); `again` false only forgets that the halt held it (its episode closed meanwhile).
   * Answers whether this call changed it.
   */
  async reopenHeld(trx: Trx, episodeId: string, run: number, nowMs: number, again: boolean): Promise<boolean> {
    const held = trx('action_paths').where({ episode_id: episodeId, run, state: 'done' }).whereNotNull('held_by_halt');
    const n = again ? await held.update(startedAgain(run + 1, nowMs)) : await held.update({ held_by_halt: null });
    return Number(n) === 1;
  }

  /** The path as it stands, locked for the rest of `trx` (MySQL). */
  async lock(trx: Trx, episodeId: string): Promise<ActionPath | null> {
    const q = trx('action_paths').select('*').where({ episode_id: episodeId });
    const row = (await (dialect(trx) === 'mysql' ? q.forUpdate() : q).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }

  /** Takes up to `limit` paths whose next step is due and that no live lease holds (but those in `except`), one conditional update each. */
  async claim(holder: string, nowMs: number, leaseMs: number, limit: number, except: string[] = []): Promise<ActionPath[]> {
    const rows = (await this.#db('action_paths')
      .select('episode_id', 'state', 'run')
      .whereNot({ state: 'done' })
      .whereNotIn('episode_id', except.slice(0, 500))
      .andWhere('due_ms', '<=', nowMs)
      .andWhere((w) => w.whereNull('lease_until_ms').orWhere('lease_until_ms', '<=', nowMs))
      .orderBy('due_ms')
      .limit(limit)) as Array<{ episode_id: string; state: string; run: number | string }>;
    const out: ActionPath[] = [];
    for (const r of rows) {
      const n = await this.#db('action_paths')
        .where({ episode_id: r.episode_id, state: r.state, run: r.run })
        .andWhere((w) => w.whereNull('lease_until_ms').orWhere('lease_until_ms', '<=', nowMs))
        .update({ lease_holder: holder, lease_until_ms: nowMs + leaseMs });
      if (Number(n) === 1) {
        const p = await this.get(r.episode_id);
        if (p !== null) out.push(p);
      }
    }
    return out;
  }

  /** Extends `holder`'s leases on these paths to `untilMs` (the holder renews them while it works). */
  async renew(holder: string, episodeIds: readonly string[], untilMs: number): Promise<void> {
    if (episodeIds.length === 0) return;
    await this.#db('action_paths').where({ lease_holder: holder }).whereIn('episode_id', episodeIds).update({ lease_until_ms: untilMs });
  }

  /**
   * Gives back the paths `holder` claimed (at shutdown), or every holder's (null: at the start of
   * the only host process on SQLite): any host's next pass takes them.
   */
  async release(holder: string | null): Promise<number> {
    const q = this.#db('action_paths').whereNotNull('lease_holder').andWhere('lease_until_ms', '>', 0);
    return Number(await (holder === null ? q : q.andWhere({ lease_holder: holder })).update({ lease_until_ms: 0 }));
  }

  /** The path locked for the rest of `trx`, when `holder` still holds it at `run`; else null. */
  async held(trx: Trx, episodeId: string, run: number, holder: string): Promise<ActionPath | null> {
    const q = trx('action_paths').select('*').where({ episode_id: episodeId });
    const row = (await (dialect(trx) === 'mysql' ? q.forUpdate() : q).first()) as (Row & { lease_holder: string | null }) | undefined;
    if (row === undefined || row.lease_holder !== holder || Number(row.run) !== run) return null;
    return fromRow(row);
  }

  /** Saves what a step decided; `release` gives the lease back (the step is over). */
  async save(trx: Trx, episodeId: string, patch: Partial<Omit<ActionPath, 'episode_id'>>, release = true): Promise<void> {
    const row: Record<string, unknown> = { ...patch };
    for (const f of JSON_FIELDS) if (f in patch) row[f] = patch[f] === null ? null : JSON.stringify(patch[f]);
    if (release) Object.assign(row, { lease_holder: null, lease_until_ms: null });
    await trx('action_paths').where({ episode_id: episodeId }).update(row);
  }

  async get(episodeId: string, trx: Trx | Db = this.#db): Promise<ActionPath | null> {
    const row = (await trx('action_paths').select('*').where({ episode_id: episodeId }).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }
}
