/**
 * Prometheus-style matcher lists (`alertname="PaymentsDown",service=~"pay.*"`, braces optional),
 * as the `silence` action's `matchers` param gives them: parsed into Alertmanager's silence
 * matchers and written back as its `filter` syntax.
 */
import type { MatcherLibrary } from '../../../host/plugins/contract.ts';

/** One matcher in Alertmanager API v2's shape. */
export interface Matcher {
  name: string;
  value: string;
  isRegex: boolean;
  isEqual: boolean;
}

/** A label name Alertmanager's matchers take (the classic Prometheus syntax: no dots). */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_MATCHERS = 20;

/**
 * The matchers of a list in Alertmanager's shape, or what is wrong with it (naming the matcher,
 * never guessing). The list is read by the host's own parser (`ctx.lib.matchers`, plugin API
 * 1.6: RE2 expressions checked before anything is sent); on top, a silence takes Prometheus
 * label names only, at most 20 matchers, and not only matchers that also match an absent label.
 */
export function parseMatchers(lib: MatcherLibrary, text: string): { ok: true; matchers: Matcher[] } | { ok: false; problem: string } {
  const fail = (why: string) => ({ ok: false as const, problem: `matchers: ${why}` });
  const parsed = lib.parse(text);
  if (!parsed.ok) return fail(parsed.problem);
  const bad = parsed.matchers.find((m) => !NAME.test(m.label));
  if (bad !== undefined) return fail(`${bad.label} is not a label name Alertmanager takes (letters, digits and _)`);
  if (parsed.matchers.length > MAX_MATCHERS) return fail(`at most ${MAX_MATCHERS} matchers`);
  // Each matcher alone, against an alert without its label: a silence of such matchers only covers every alert.
  if (parsed.matchers.every((m) => lib.matches([m], {})))
    return fail('every matcher also matches alerts without that label; at least one must name a label value, or the silence would cover every alert');
  return {
    ok: true,
    matchers: parsed.matchers.map((m) => ({ name: m.label, value: m.value, isRegex: m.op === '=~' || m.op === '!~', isEqual: m.op === '=' || m.op === '=~' })),
  };
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
