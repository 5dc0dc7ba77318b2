import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';

/** What a caller hands the ledger. `data` must be a JSON object; `trace` is an episode id. */
export interface EventInput {
  type: string;
  actor: string;
  reason?: string;
  data?: Record<string, unknown>;
  trace?: string | null;
}

/** A stored entry as the database holds it: `data` is the canonical JSON text that was hashed. */
export interface StoredEntry {
  seq: number;
  at: string;
  type: string;
  actor: string;
  reason: string;
  data: string;
  trace: string | null;
  prev_hash: string;
  hash: string;
}

/** An entry as the API answers it. */
export interface LedgerEvent extends Omit<StoredEntry, 'data'> {
  data: Record<string, unknown>;
}

export interface ChainHead {
  seq: number;
  hash: string;
}

export const GENESIS_HASH = '0'.repeat(64);
const DOMAIN_TAG = 'ledger:v1';

/** RFC 8785 canonical JSON of any JSON value. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no JSON form');
  return text;
}

/**
 * The canonical JSON (RFC 8785) of an entry without its hashes, built around the stored `data`
 * text so that the hash covers exactly the bytes in the database. Keys in code-point order:
 * actor, at, data, reason, seq, trace, type. Equals canonicalJson() of the parsed entry when
 * `data` is itself canonical, which appends guarantee (tested).
 */
export function entryText(e: Omit<StoredEntry, 'prev_hash' | 'hash' | 'seq'>, seq: number): string {
  const str = JSON.stringify;
  return `{"actor":${str(e.actor)},"at":${str(e.at)},"data":${e.data},"reason":${str(e.reason)},"seq":${seq},"trace":${e.trace === null ? 'null' : str(e.trace)},"type":${str(e.type)}}`;
}

/** hash = sha256("ledger:v1" ‖ prev_hash ‖ canonical entry), hex. */
export function entryHash(prevHash: string, text: string): string {
  // One-shot: no Hash object per entry, which matters when verify re-hashes millions.
  return hash('sha256', DOMAIN_TAG + prevHash + text, 'hex');
}

export function toEvent(row: StoredEntry): LedgerEvent {
  return { ...row, seq: Number(row.seq), data: JSON.parse(row.data) as Record<string, unknown> };
}
