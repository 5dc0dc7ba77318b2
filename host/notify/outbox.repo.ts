import type { NotifyEpisode, NotifyEvent } from '../plugins/contract.ts';
import { dialect, type Db, type Trx } from '../storage/db.ts';

export type ChannelKind = 'email' | 'target';

/** One message to one recipient or target. */
export interface Delivery {
  id: string;
  episode_id: string;
  event: NotifyEvent;
  channel_kind: ChannelKind;
  /** The e-mail address or the connector name. */
  channel: string;
  /** The episode as it was when the message was written. */
  episode: NotifyEpisode;
  /** `stale`: dropped undelivered because the incident closed first (an escalation or diagnosis of a fixed incident). */
  state: 'pending' | 'sent' | 'failed' | 'stale';
  attempts: number;
  created_at: string;
  created_ms: number;
  next_ms: number;
  last_problem: string | null;
}

/** The outcome of the last attempt to reach one recipient or target. */
export interface ChannelState {
  channel_kind: ChannelKind;
  name: string;
  ok: boolean;
  last_problem: string | null;
  last_attempt_at: string;
  last_ok_at: string | null;
}

type Row = Omit<Delivery, 'episode' | 'created_ms' | 'next_ms'> & { episode: string; created_ms: number | string; next_ms: number | string };
const fromRow = (r: Row): Delivery => ({
  id: r.id,
  episode_id: r.episode_id,
  event: r.event,
  channel_kind: r.channel_kind,
  channel: r.channel,
  episode: JSON.parse(r.episode) as NotifyEpisode,
  state: r.state,
  attempts: Number(r.attempts),
  created_at: r.created_at,
  created_ms: Number(r.created_ms),
  next_ms: Number(r.next_ms),
  last_problem: r.last_problem,
});
const COLUMNS = ['id', 'episode_id', 'event', 'channel_kind', 'channel', 'episode', 'state', 'attempts', 'created_at', 'created_ms', 'next_ms', 'last_problem'];

/**
 * The only code that touches `notify_outbox` and `notify_channels`. A delivery is taken with ONE
 * conditional update (pending, due, and its lease free or expired), so of several host processes
 * racing for it exactly one wins, on SQLite and MySQL alike; expiry is decided by the time the
 * caller passes (the injected clock), never the database's.
 */
export class OutboxRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async add(trx: Trx, d: Omit<Delivery, 'state' | 'attempts' | 'last_problem'>): Promise<void> {
    await trx('notify_outbox').insert({
      priority: priorityOf(d.episode.severity),
      id: d.id,
      episode_id: d.episode_id,
      event: d.event,
      channel_kind: d.channel_kind,
      channel: d.channel,
      episode: JSON.stringify(d.episode),
      state: 'pending',
      attempts: 0,
      created_at: d.created_at,
      created_ms: d.created_ms,
      next_ms: d.next_ms,
      lease_holder: null,
      lease_until_ms: null,
      last_problem: null,
      done_at: null,
    });
  }

  /** The channels told (or being told) that an episode opened: who hears of its escalation and close. */
  async channelsOf(trx: Trx, episodeId: string): Promise<Array<{ channel_kind: ChannelKind; channel: string }>> {
    return (await trx('notify_outbox')
      .distinct('channel_kind', 'channel')
      .where({ episode_id: episodeId, event: 'incident.opened' })
      .orderBy(['channel_kind', 'channel'])) as Array<{ channel_kind: ChannelKind; channel: string }>;
  }

  /**
   * Marks `stale` the episode's messages of `events` still waiting (first attempt or retry) and not
   * being sent right now (no live lease: one being sent finishes and is recorded as usual); answers them.
   */
  async dropStale(
    trx: Trx,
    episodeId: string,
    events: NotifyEvent[],
    nowMs: number,
    at: string,
  ): Promise<Array<Pick<Delivery, 'id' | 'event' | 'channel_kind' | 'channel' | 'attempts'>>> {
    const free = (q: ReturnType<Trx>) => q.andWhere((w) => w.whereNull('lease_until_ms').orWhere('lease_until_ms', '<=', nowMs));
    const rows = (await free(trx('notify_outbox').where({ episode_id: episodeId, state: 'pending' }).whereIn('event', events))
      .select('id', 'event', 'channel_kind', 'channel', 'attempts')
      .orderBy('id')) as Array<Pick<Delivery, 'id' | 'event' | 'channel_kind' | 'channel'> & { attempts: number | string }>;
    const dropped: Array<Pick<Delivery, 'id' | 'event' | 'channel_kind' | 'channel' | 'attempts'>> = [];
    // One conditional update each: a message another host took meanwhile is left to it.
    for (const r of rows) {
      const n = await free(trx('notify_outbox').where({ id: r.id, state: 'pending' })).update({
        state: 'stale',
        done_at: at,
        lease_holder: null,
        lease_until_ms: null,
      });
      if (Number(n) === 1) dropped.push({ ...r, attempts: Number(r.attempts) });
    }
    return dropped;
  }

  /** Pending deliveries due at `nowMs` whose lease is free or expired: critical first, then warning, then info; oldest first in each. */
  async due(nowMs: number, limit: number): Promise<Delivery[]> {
    const rows = (await this.#db('notify_outbox as o')
      .select(COLUMNS.map((c) => `o.${c}`))
      .where({ 'o.state': 'pending' })
      .andWhere('o.next_ms', '<=', nowMs)
      .andWhere((w) => w.whereNull('o.lease_until_ms').orWhere('o.lease_until_ms', '<=', nowMs))
      // A recipient's or target's messages go in order across hosts: none while another of its
      // messages is being sent (under a live lease), such as one a dead host held until its lease ends.
      .whereNotExists((q) =>
        q
          .select(this.#db.raw('1'))
          .from('notify_outbox as busy')
          .whereRaw('busy.channel_kind = o.channel_kind and busy.channel = o.channel')
          .andWhere('busy.state', 'pending')
          .andWhere('busy.lease_until_ms', '>', nowMs),
      )
      .orderBy([{ column: 'o.priority', order: 'desc' }, { column: 'o.next_ms' }, { column: 'o.id' }])
      .limit(limit)) as Row[];
    return rows.map(fromRow);
  }

  /** A recipient's first attempts held back until at most `untilMs` (paced e-mails), to go with a critical one now. */
  async heldBack(kind: ChannelKind, channel: string, nowMs: number, untilMs: number, limit: number): Promise<Delivery[]> {
    const rows = (await this.#db('notify_outbox')
      .select(COLUMNS)
      .where({ state: 'pending', channel_kind: kind, channel, attempts: 0 })
      .andWhere('next_ms', '>', nowMs)
      .andWhere('next_ms', '<=', untilMs)
      .andWhere((w) => w.whereNull('lease_until_ms').orWhere('lease_until_ms', '<=', nowMs))
      .orderBy([{ column: 'priority', order: 'desc' }, { column: 'next_ms' }, { column: 'id' }])
      .limit(limit)) as Row[];
    return rows.map(fromRow);
  }

  /** Takes a delivery held back until later (see heldBack) for `holder`: as `claim`, without the due check. */
  async claimEarly(id: string, holder: string, nowMs: number, untilMs: number): Promise<boolean> {
    const n = await this.#db('notify_outbox')
      .where({ id, state: 'pending', attempts: 0 })
      .andWhere((w) => w.whereNull('lease_until_ms').orWhere('lease_until_ms', '<=', nowMs))
      .update({ lease_holder: holder, lease_until_ms: untilMs });
    return n === 1;
  }

  /** Moves pending deliveries nobody holds to `nextMs` without counting an attempt (a person's e-mails paced). */
  async defer(ids: string[], nowMs: number, nextMs: number): Promise<void> {
    for (let i = 0; i < ids.length; i += 500)
      await this.#db('notify_outbox')
        .whereIn('id', ids.slice(i, i + 500))
        .andWhere({ state: 'pending' })
        .andWhere((w) => w.whereNull('lease_until_ms').orWhere('lease_until_ms', '<=', nowMs))
        .update({ next_ms: nextMs });
  }

  /** Takes a delivery for `holder` until `untilMs`; false when another holder has it or it is no longer due. */
  async claim(id: string, holder: string, nowMs: number, untilMs: number): Promise<boolean> {
    const n = await this.#db('notify_outbox')
      .where({ id, state: 'pending' })
      .andWhere('next_ms', '<=', nowMs)
      .andWhere((w) => w.whereNull('lease_until_ms').orWhere('lease_until_ms', '<=', nowMs))
      .update({ lease_holder: holder, lease_until_ms: untilMs });
    return n === 1;
  }

  /** Extends `holder`'s leases on these deliveries to `untilMs` (the holder renews them while it sends). */
  async renew(holder: string, ids: readonly string[], untilMs: number): Promise<void> {
    if (ids.length === 0) return;
    await this.#db('notify_outbox').where({ state: 'pending', lease_holder: holder }).whereIn('id', ids).update({ lease_until_ms: untilMs });
  }

  /**
   * Gives back the pending deliveries `holder` claimed (at shutdown), or every holder's (null: at
   * the start of the only host process on SQLite): any host's next run takes them.
   */
  async release(holder: string | null): Promise<number> {
    const q = this.#db('notify_outbox').where({ state: 'pending' }).whereNotNull('lease_holder').andWhere('lease_until_ms', '>', 0);
    return Number(await (holder === null ? q : q.andWhere({ lease_holder: holder })).update({ lease_until_ms: 0 }));
  }

  /** The delivery, if `holder` still holds it (locked on MySQL for the rest of `trx`). */
  async held(trx: Trx, id: string, holder: string): Promise<Delivery | null> {
    const q = trx('notify_outbox').select(COLUMNS).where({ id, state: 'pending', lease_holder: holder });
    const row = (await (dialect(this.#db) === 'mysql' ? q.forUpdate() : q).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }

  async finish(trx: Trx, id: string, state: 'sent' | 'failed', attempts: number, problem: string | null, at: string): Promise<void> {
    await trx('notify_outbox').where({ id }).update({ state, attempts, last_problem: problem, done_at: at, lease_holder: null, lease_until_ms: null });
  }

  async retryAt(trx: Trx, id: string, attempts: number, problem: string, nextMs: number): Promise<void> {
    await trx('notify_outbox').where({ id }).update({ attempts, last_problem: problem, next_ms: nextMs, lease_holder: null, lease_until_ms: null });
  }

  async pending(): Promise<number> {
    const row = (await this.#db('notify_outbox').count({ n: '*' }).where({ state: 'pending' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }

  async putChannel(trx: Trx, s: ChannelState): Promise<void> {
    const key = `${s.channel_kind}:${s.name}`;
    const row = {
      channel: key,
      channel_kind: s.channel_kind,
      name: s.name,
      ok: s.ok,
      last_problem: s.last_problem,
      last_attempt_at: s.last_attempt_at,
      last_ok_at: s.last_ok_at,
    };
    await trx('notify_channels').insert(row).onConflict('channel').merge();
  }

  /** The last attempt to reach a recipient or target, read in `trx` (null: on its own). */
  async channel(trx: Trx | null, kind: ChannelKind, name: string): Promise<ChannelState | null> {
    const r = (await (trx ?? this.#db)('notify_channels')
      .select('*')
      .where({ channel: `${kind}:${name}` })
      .first()) as (Omit<ChannelState, 'ok'> & { ok: number | boolean }) | undefined;
    return r === undefined
      ? null
      : {
          channel_kind: r.channel_kind,
          name: r.name,
          ok: r.ok === true || r.ok === 1,
          last_problem: r.last_problem,
          last_attempt_at: r.last_attempt_at,
          last_ok_at: r.last_ok_at,
        };
  }

  async channels(): Promise<ChannelState[]> {
    const rows = (await this.#db('notify_channels').select('*').orderBy('channel')) as Array<Omit<ChannelState, 'ok'> & { ok: number | boolean }>;
    return rows.map((r) => ({
      channel_kind: r.channel_kind,
      name: r.name,
      ok: r.ok === true || r.ok === 1,
      last_problem: r.last_problem,
      last_attempt_at: r.last_attempt_at,
      last_ok_at: r.last_ok_at,
    }));
  }
}

/** The order delivery takes messages in: critical 2, warning 1, info 0. */
export function priorityOf(severity: string): number {
  return severity === 'critical' ? 2 : severity === 'info' ? 0 : 1;
}
