import { RE2JS } from 're2js';
import type { LabelMatcher, MatchOp } from './plugins/contract.ts';

/**
 * Prometheus-style label matcher lists, as alert and workload links carry them:
 * `job="payments-api", namespace=~"pay.*", env!="dev"`. Values may be left unquoted when they
 * hold no comma or space (`job=payments-api`). Label names may hold dots
 * (`kubernetes.namespace`), as the normalisers flatten nested labels that way. A regular
 * expression matches the whole value, as in Prometheus, and with Prometheus's engine's
 * semantics: RE2 (re2js, a pure JavaScript port), whose matching takes time linear in the value
 * whatever the pattern, so no pattern a person saves (`(a+)+b`) can make placing an alert
 * backtrack for seconds. What RE2 does not have (backreferences, lookaround) is refused at save.
 */
export type { MatchOp };
/** A compiled regular expression: whether it matches the whole value. */
export interface ValueTest {
  test(value: string): boolean;
}
/** A parsed matcher: the contract's, with its expression compiled once for `=~` and `!~`. */
export interface Matcher extends LabelMatcher {
  re?: ValueTest;
}

/** The value as a whole-value RE2 expression (`.` matching a line break too, as in Prometheus 3), or why it is none. */
function compile(value: string): ValueTest | string {
  try {
    const re = RE2JS.compile(`(?s:${value})`);
    return { test: (v) => re.matches(v) };
  } catch (e) {
    return (e instanceof Error ? e.message : String(e)).split('\n', 1)[0]!.slice(0, 200);
  }
}

const ONE = /^\s*([A-Za-z_][A-Za-z0-9_.:-]*)\s*(=~|!~|!=|=)\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s"]+))\s*(?:,|$)/;

/** The matchers of a list, or the reason it is not one. */
export function parseMatchers(text: string): { ok: true; matchers: Matcher[] } | { ok: false; problem: string } {
  let rest = text.trim();
  if (rest.startsWith('{') && rest.endsWith('}')) rest = rest.slice(1, -1);
  const matchers: Matcher[] = [];
  while (rest.trim() !== '') {
    const m = ONE.exec(rest);
    if (m === null) return { ok: false, problem: `cannot read a label matcher at "${rest.trim().slice(0, 40)}"` };
    const value = m[3] !== undefined ? m[3].replace(/\\(.)/g, '$1') : m[4]!;
    const op = m[2] as MatchOp;
    const matcher: Matcher = { label: m[1]!, op, value };
    if (op === '=~' || op === '!~') {
      const re = compile(value);
      if (typeof re === 'string') return { ok: false, problem: `${m[1]}${op}"${value}" is not a regular expression RE2 (Prometheus) accepts: ${re}` };
      matcher.re = re;
    }
    matchers.push(matcher);
    rest = rest.slice(m[0].length);
  }
  if (matchers.length === 0) return { ok: false, problem: 'a matcher list needs at least one matcher' };
  if (!matchers.some((x) => x.op === '=' || (x.op === '=~' && !x.re!.test(''))))
    return { ok: false, problem: 'a matcher list needs one matcher that selects (=, or =~ not matching the empty value)' };
  return { ok: true, matchers };
}

/**
 * Whether labels satisfy every matcher (a missing label reads as the empty value). A matcher
 * not from `parseMatchers` (a plugin's own) has its expression compiled here; one RE2 cannot
 * read matches nothing.
 */
export function matches(matchers: readonly Matcher[], labels: Readonly<Record<string, string>>): boolean {
  for (const given of matchers) {
    const m = given.re !== undefined || (given.op !== '=~' && given.op !== '!~') ? given : withRe(given);
    const v = labels[m.label] ?? '';
    switch (m.op) {
      case '=':
        if (v !== m.value) return false;
        break;
      case '!=':
        if (v === m.value) return false;
        break;
      case '=~':
        if (!m.re!.test(v)) return false;
        break;
      case '!~':
        if (m.re!.test(v)) return false;
        break;
    }
  }
  return true;
}

function withRe(m: LabelMatcher): Matcher {
  const re = compile(m.value);
  return { ...m, re: typeof re === 'string' ? { test: () => false } : re };
}
