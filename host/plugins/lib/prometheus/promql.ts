/**
 * PromQL text helpers of the pack: label matchers as the estate writes them turned into PromQL,
 * durations, and numbers for people.
 */

/** A PromQL double-quoted string literal of `value`. */
export function quote(value: string): string {
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** One `label op value` of the estate's matcher syntax: values quoted (with `\` escapes) or bare. */
const ONE = /^\s*([A-Za-z_][A-Za-z0-9_.:-]*)\s*(=~|!~|!=|=)\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s"]+))\s*(?:,|$)/;
const PROM_LABEL = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The estate's matcher list (`job="orders", env!=dev`, braces optional) as PromQL matchers
 * without braces (`job="orders",env!="dev"`), or why it cannot be one: a label name PromQL does
 * not allow (the estate allows dots, as normalisers flatten nested alert labels), or text that
 * is not a matcher list.
 */
export function promMatchers(text: string): { ok: true; selector: string } | { ok: false; problem: string } {
  let rest = text.trim();
  if (rest.startsWith('{') && rest.endsWith('}')) rest = rest.slice(1, -1);
  const out: string[] = [];
  while (rest.trim() !== '') {
    const m = ONE.exec(rest);
    if (m === null) return { ok: false, problem: `cannot read a label matcher in ${quote(text)}` };
    const label = m[1]!;
    if (!PROM_LABEL.test(label)) return { ok: false, problem: `${label} is not a Prometheus label name` };
    const value = m[3] !== undefined ? m[3].replace(/\\(.)/g, '$1') : m[4]!;
    out.push(`${label}${m[2]!}${quote(value)}`);
    rest = rest.slice(m[0].length);
  }
  if (out.length === 0) return { ok: false, problem: 'the matcher list is empty' };
  return { ok: true, selector: out.join(',') };
}

const UNIT_S: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };

/** Seconds in a PromQL duration (`5m`, `1h30m`), or null when it is not one (or is zero). */
export function durationSeconds(text: string): number | null {
  if (!/^(\d+(ms|s|m|h|d|w|y))+$/.test(text)) return null;
  let total = 0;
  for (const m of text.matchAll(/(\d+)(ms|s|m|h|d|w|y)/g)) total += Number(m[1]) * UNIT_S[m[2]!]!;
  return total > 0 && Number.isFinite(total) ? total : null;
}

/** A reader's sample value as a number (recorded answers may hold `"NaN"`). */
export const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v));

/** A share as a percentage for people: `12.3 %`, `0.04 %`. */
export function percent(ratio: number): string {
  const p = ratio * 100;
  return `${Math.abs(p) >= 10 ? p.toFixed(1) : p.toFixed(2)} %`;
}

/** A byte count for people: `1.5 GiB`. */
export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = Math.abs(n);
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${n < 0 ? '-' : ''}${i === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`;
}

/** Seconds for people: `850 ms`, `2.41 s`. */
export function seconds(s: number): string {
  return s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(2)} s`;
}

/** A number rounded for `observed` (6 significant digits; NaN and infinities as text, which JSON can hold). */
export function rounded(v: number): number | string {
  if (!Number.isFinite(v)) return String(v);
  return Number(v.toPrecision(6));
}
