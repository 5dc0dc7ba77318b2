/**
 * Prometheus-style matcher lists (`alertname="PaymentsDown",service=~"pay.*"`, braces optional),
 * as the `silence` action's `matchers` param gives them: parsed into Alertmanager's silence
 * matchers and written back as its `filter` syntax. Self-contained (no imports).
 */

/** One matcher in Alertmanager API v2's shape. */
export interface Matcher {
  name: string;
  value: string;
  isRegex: boolean;
  isEqual: boolean;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const OPS = ['=~', '!~', '!=', '='] as const;
const MAX_MATCHERS = 20;

/** The matchers of a list, or what is wrong with it (naming the matcher, never guessing). */
export function parseMatchers(text: string): { ok: true; matchers: Matcher[] } | { ok: false; problem: string } {
  let s = text.trim();
  if (s.startsWith('{') && s.endsWith('}')) s = s.slice(1, -1).trim();
  const matchers: Matcher[] = [];
  let i = 0;
  const fail = (why: string) => ({ ok: false as const, problem: `matchers: ${why}` });
  while (i < s.length) {
    while (s[i] === ' ') i++;
    const nameStart = i;
    while (i < s.length && /[A-Za-z0-9_]/.test(s[i]!)) i++;
    const name = s.slice(nameStart, i);
    if (!NAME.test(name)) return fail(`a label name is expected at position ${nameStart + 1}`);
    while (s[i] === ' ') i++;
    const op = OPS.find((o) => s.startsWith(o, i));
    if (op === undefined) return fail(`${name} needs one of =, !=, =~, !~`);
    i += op.length;
    while (s[i] === ' ') i++;
    let value = '';
    if (s[i] === '"') {
      i++;
      let closed = false;
      while (i < s.length) {
        const ch = s[i]!;
        if (ch === '\\' && i + 1 < s.length) {
          const next = s[i + 1]!;
          value += next === 'n' ? '\n' : next;
          i += 2;
        } else if (ch === '"') {
          closed = true;
          i++;
          break;
        } else {
          value += ch;
          i++;
        }
      }
      if (!closed) return fail(`the value of ${name} has no closing quote`);
    } else {
      const end = s.indexOf(',', i);
      value = s.slice(i, end === -1 ? s.length : end).trim();
      i = end === -1 ? s.length : end;
      if (/["{}]/.test(value)) return fail(`the value of ${name} must be quoted`);
    }
    matchers.push({ name, value, isRegex: op === '=~' || op === '!~', isEqual: op === '=' || op === '=~' });
    while (s[i] === ' ') i++;
    if (i < s.length) {
      if (s[i] !== ',') return fail(`a comma is expected after ${name}`);
      i++;
    }
  }
  if (matchers.length === 0) return fail('at least one matcher is needed, such as alertname="PaymentsDown"');
  if (matchers.length > MAX_MATCHERS) return fail(`at most ${MAX_MATCHERS} matchers`);
  if (matchers.every(matchesEmpty))
    return fail('every matcher also matches alerts without that label; at least one must name a label value, or the silence would cover every alert');
  return { ok: true, matchers };
}

/** Whether a matcher matches an absent (empty) label: such a matcher alone would silence everything. */
function matchesEmpty(m: Matcher): boolean {
  if (!m.isRegex) return m.isEqual ? m.value === '' : m.value !== '';
  try {
    const hit = new RegExp(`^(?:${m.value})$`).test('');
    return m.isEqual ? hit : !hit;
  } catch {
    // A pattern JavaScript cannot read (RE2 differs a little): Alertmanager checks it itself.
    return false;
  }
}

/** A matcher in Alertmanager's filter syntax: `name="value"`, with `=~`, `!=`, `!~` as given. */
export function filterOf(m: Matcher): string {
  const op = m.isRegex ? (m.isEqual ? '=~' : '!~') : m.isEqual ? '=' : '!=';
  return `${m.name}${op}${quote(m.value)}`;
}

/** The matcher as an equality on its literal value: how Alertmanager's silence filter compares a silence's matchers. */
export function silenceFilterOf(m: Matcher): string {
  return `${m.name}=${quote(m.value)}`;
}

function quote(v: string): string {
  return `"${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`;
}

/** Whether two matcher lists are the same (order aside). */
export function sameMatchers(a: Matcher[], b: Matcher[]): boolean {
  const key = (m: Matcher) => JSON.stringify([m.name, m.value, m.isRegex, m.isEqual]);
  const x = a.map(key).sort();
  const y = b.map(key).sort();
  return x.length === y.length && x.every((k, i) => k === y[i]);
}
