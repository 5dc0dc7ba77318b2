import type { Db, Trx } from '../storage/db.ts';
import type { MemberRef } from './messages.ts';
import type { Part } from './parts.ts';

/** A member as the home keeps it (and as a member keeps the home's list). */
export interface MemberRow extends MemberRef {
  last_seen_at: string | null;
  /** Per part, the bundle it last applied, as it said: [epoch, version]. */
  applied: Partial<Record<Part, [number, number]>>;
  last_poll_ms: number;
  last_nonce?: string | null;
  notified_epoch: number;
}

type Raw = Omit<MemberRow, 'own' | 'applied' | 'last_poll_ms' | 'notified_epoch'> & {
  own: string;
  applied: string;
  last_poll_ms: number | string;
  notified_epoch: number | string;
};

const fromRaw = (r: Raw): MemberRow => ({
  ...r,
  own: JSON.parse(r.own) as Part[],
  applied: JSON.parse(r.applied) as MemberRow['applied'],
  last_poll_ms: Number(r.last_poll_ms),
  notified_epoch: Number(r.notified_epoch),
});

const toRaw = (m: Partial<MemberRow>): Partial<Raw> => {
  const out: Record<string, unknown> = { ...m };
  if (m.own !== undefined) out.own = JSON.stringify(m.own);
  if (m.applied !== undefined) out.applied = JSON.stringify(m.applied);
  return out as Partial<Raw>;
};

/** The only code that touches `keychain_members`. */
export class MembersRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async list(trx?: Trx): Promise<MemberRow[]> {
    return ((await (trx ?? this.#db)('keychain_members').select('*').orderBy('paired_at').orderBy('name')) as Raw[]).map(fromRaw);
  }

  async get(fingerprint: string, trx?: Trx): Promise<MemberRow | null> {
    const row = (await (trx ?? this.#db)('keychain_members').where({ fingerprint }).first()) as Raw | undefined;
    return row === undefined ? null : fromRaw(row);
  }

  /** By fingerprint or by name. */
  async find(install: string, trx?: Trx): Promise<MemberRow | null> {
    const row = (await (trx ?? this.#db)('keychain_members').where({ fingerprint: install }).orWhere({ name: install }).first()) as Raw | undefined;
    return row === undefined ? null : fromRaw(row);
  }

  async insert(trx: Trx, m: MemberRow): Promise<void> {
    await trx('keychain_members').insert(toRaw(m));
  }

  async update(trx: Trx | null, fingerprint: string, patch: Partial<MemberRow>): Promise<void> {
    await (trx ?? this.#db)('keychain_members').where({ fingerprint }).update(toRaw(patch));
  }

  /**
   * Notes an accepted poll: only when it is dated after the last one (or at the same moment with
   * another nonce), so a replayed or reordered poll changes nothing; true when this call noted it.
   */
  async notePoll(trx: Trx, fingerprint: string, atMs: number, nonce: string, patch: Partial<MemberRow>): Promise<boolean> {
    const n = await trx('keychain_members')
      .where({ fingerprint })
      .where((q) => q.where('last_poll_ms', '<', atMs).orWhere((same) => same.where('last_poll_ms', atMs).whereNot('last_nonce', nonce)))
      .update(toRaw({ ...patch, last_poll_ms: atMs, last_nonce: nonce }));
    return Number(n) === 1;
  }

  async remove(trx: Trx, fingerprint: string): Promise<boolean> {
    return Number(await trx('keychain_members').where({ fingerprint }).delete()) > 0;
  }

  async clear(trx: Trx): Promise<void> {
    await trx('keychain_members').delete();
  }

  async count(trx?: Trx): Promise<number> {
    const row = (await (trx ?? this.#db)('keychain_members').count({ n: '*' }).first()) as { n: number | string } | undefined;
    return Number(row?.n ?? 0);
  }
}
