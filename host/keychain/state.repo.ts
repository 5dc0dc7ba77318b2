import { dialect, type Db, type Trx } from '../storage/db.ts';
import type { Part } from './parts.ts';
import type { Signed } from './messages.ts';

/** An install of the keychain as the others know it: its identity key, its keychain box key, where it is. */
export interface InstallRef {
  name: string;
  fingerprint: string;
  /** Its Ed25519 identity key (the install fingerprint's key), raw base64url. */
  install_key: string;
  /** Its X25519 keychain key, raw base64url. */
  box_key: string;
  address: string | null;
  version: string | null;
}

/** What this install says of a take-over it learned of while it was the home. */
export interface Demoted {
  at: string;
  epoch: number;
  /** The install that took over. */
  by: Pick<InstallRef, 'name' | 'fingerprint' | 'address'>;
}

/** The `keychain_state` row: private keys and the content key sealed with the secret key. */
export interface KeychainState {
  role: 'home' | 'member';
  keychain: string;
  name: string;
  address: string | null;
  epoch: number;
  sign_key: string;
  sign_private: string | null;
  content_key: string;
  box_key: string;
  box_private: string;
  /** The home (a member only). */
  home: InstallRef | null;
  scope: Part[];
  own: Part[];
  joined_at: string;
  last_contact_at: string | null;
  last_problem: string | null;
  next_round_ms: number;
  notice: Signed | null;
  demoted: Demoted | null;
  updated_at: string;
}

type Row = Omit<KeychainState, 'home' | 'scope' | 'own' | 'notice' | 'demoted' | 'next_round_ms' | 'epoch'> & {
  home: string | null;
  scope: string;
  own: string;
  notice: string | null;
  demoted: string | null;
  next_round_ms: number | string;
  epoch: number | string;
};

const json = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

function fromRow(r: Row): KeychainState {
  return {
    ...r,
    epoch: Number(r.epoch),
    next_round_ms: Number(r.next_round_ms),
    home: json<InstallRef>(r.home),
    scope: json<Part[]>(r.scope) ?? [],
    own: json<Part[]>(r.own) ?? [],
    notice: json<Signed>(r.notice),
    demoted: json<Demoted>(r.demoted),
  };
}

function toRow(s: Partial<KeychainState>): Partial<Row> {
  const out: Record<string, unknown> = { ...s };
  for (const k of ['home', 'scope', 'own', 'notice', 'demoted'] as const) if (k in s) out[k] = s[k] === null ? null : JSON.stringify(s[k]);
  return out as Partial<Row>;
}

/** The only code that touches `keychain_state` (one row, id 1; none while the install is in no keychain). */
export class KeychainStateRepo {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  async get(trx?: Trx): Promise<KeychainState | null> {
    const row = (await (trx ?? this.#db)('keychain_state').where({ id: 1 }).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }

  /** The row, locked on MySQL for the rest of `trx`. */
  async lock(trx: Trx): Promise<KeychainState | null> {
    const q = trx('keychain_state').where({ id: 1 });
    const row = (await (dialect(trx) === 'mysql' ? q.forUpdate() : q).first()) as Row | undefined;
    return row === undefined ? null : fromRow(row);
  }

  async insert(trx: Trx, s: KeychainState): Promise<void> {
    await trx('keychain_state').insert({ id: 1, ...toRow(s) });
  }

  async update(trx: Trx | null, patch: Partial<KeychainState>): Promise<void> {
    await (trx ?? this.#db)('keychain_state').where({ id: 1 }).update(toRow(patch));
  }

  async remove(trx: Trx): Promise<void> {
    await trx('keychain_state').where({ id: 1 }).delete();
  }

  /** Takes the next round (a poll, a round of notices) when due: true for the one process that did. */
  async claimRound(dueMs: number, nextMs: number): Promise<boolean> {
    const n = await this.#db('keychain_state').where({ id: 1 }).where('next_round_ms', '<=', dueMs).update({ next_round_ms: nextMs });
    return Number(n) === 1;
  }
}
