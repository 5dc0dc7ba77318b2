import type { Entry } from 'ldapts';

/** Reading LDAP entries: attribute values whatever their case or form, filter escaping, AD's binary IDs. */

/** RFC 4515: a value inside a filter, with `\ * ( )` and NUL escaped. */
export function escapeFilter(value: string): string {
  return value.replace(/[\\*()\0]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** The entry's values of `attr` (any case), as strings; binary values as given by `binary`. */
export function values(entry: Entry, attr: string): string[] {
  const want = attr.toLowerCase();
  for (const [k, v] of Object.entries(entry)) {
    if (k.toLowerCase() !== want) continue;
    const list = Array.isArray(v) ? v : [v];
    return list.map((x) => (Buffer.isBuffer(x) ? x.toString('utf8') : String(x)));
  }
  return [];
}

export function first(entry: Entry, attr: string): string | null {
  return values(entry, attr)[0] ?? null;
}

/** The raw buffer of a binary attribute (asked for with `explicitBufferAttributes`). */
export function buffer(entry: Entry, attr: string): Buffer | null {
  const want = attr.toLowerCase();
  for (const [k, v] of Object.entries(entry)) {
    if (k.toLowerCase() !== want) continue;
    const x = Array.isArray(v) ? v[0] : v;
    return Buffer.isBuffer(x) ? x : null;
  }
  return null;
}

/** AD's objectGUID as its usual text (the first three groups little-endian). */
export function guidText(b: Buffer | null): string | null {
  if (b === null || b.length !== 16) return null;
  const h = (s: Buffer) => s.toString('hex');
  const rev = (s: Buffer) => h(Buffer.from(s).reverse());
  return `${rev(b.subarray(0, 4))}-${rev(b.subarray(4, 6))}-${rev(b.subarray(6, 8))}-${h(b.subarray(8, 10))}-${h(b.subarray(10, 16))}`;
}

/** AD's objectSid as `S-1-5-21-…`. */
export function sidText(b: Buffer | null): string | null {
  if (b === null || b.length < 8) return null;
  const count = b[1]!;
  if (b.length < 8 + count * 4) return null;
  const authority = b.readUIntBE(2, 6);
  const subs = Array.from({ length: count }, (_, i) => b.readUInt32LE(8 + i * 4));
  return ['S', b[0], authority, ...subs].join('-');
}

/** A DN compared without regard to case or the spaces after commas and around `=`. */
export function dnKey(dn: string): string {
  return dn
    .split(',')
    .map((part) =>
      part
        .split('=')
        .map((s) => s.trim())
        .join('='),
    )
    .join(',')
    .toLowerCase();
}

/** The values of a ranged attribute in `entry` (`member;range=0-1499`) and where the next range starts (null: done). */
export function ranged(entry: Entry, attr: string): { values: string[]; next: number | null } {
  const want = attr.toLowerCase();
  let found: { values: string[]; next: number | null } | null = null;
  for (const [k, v] of Object.entries(entry)) {
    const key = k.toLowerCase();
    const list = (Array.isArray(v) ? v : [v]).map(String);
    if (key === want) return { values: list, next: null };
    const m = /^([^;]+);range=(\d+)-(\d+|\*)$/.exec(key);
    if (m === null || m[1] !== want) continue;
    // Samba may answer the last range under two names (`1500-*` and `1500-2999`): `*` says it is the
    // last. An empty range has nothing after it either (Samba answers an empty group so).
    if (m[3] === '*') return { values: list, next: null };
    found ??= { values: list, next: list.length === 0 ? null : Number(m[3]) + 1 };
  }
  return found ?? { values: [], next: null };
}
