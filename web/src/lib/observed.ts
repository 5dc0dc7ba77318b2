/**
 * An evidence item's observed value, shown compactly: a number or a word as it is, anything
 * else as one line of JSON, cut at `max` characters (never inside a character); `whole` is
 * the indented JSON to show behind a disclosure when the line was cut, else null.
 */
export function observedText(value: unknown, max = 160): { short: string; whole: string | null } {
  if (value === null || value === undefined) return { short: 'nothing', whole: null };
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return cut(String(value), max, () => String(value));
  const line = JSON.stringify(value) ?? String(value);
  return cut(line, max, () => JSON.stringify(value, null, 2));
}

function cut(text: string, max: number, whole: () => string): { short: string; whole: string | null } {
  const chars = Array.from(text);
  if (chars.length <= max) return { short: text, whole: null };
  return { short: `${chars.slice(0, max).join('')}…`, whole: whole() };
}
