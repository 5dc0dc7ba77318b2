import test, { type ExecutionContext } from 'ava';
import type { Knex } from 'knex';
import { AppError } from '../../host/errors.ts';
import { applyQuery } from '../../host/episodes/query/compile.ts';
import { parseQuery, type CompareOp, type QueryNode, type StringField } from '../../host/episodes/query/parse.ts';
import { openDb } from '../../host/storage/db.ts';
import { migrate } from '../../host/storage/migrate.ts';
import { createTestStore, ENGINE } from '../helpers/db.ts';
import { mulberry32 } from '../helpers/random.ts';

/**
 * The episode query language (docs/query-language.md): parser unit tests, and property tests
 * that run random queries through the parser and `applyQuery` on the database of the pass
 * (SQLite, or MariaDB with TEST_DATABASE_URL) and compare the ids with a reference evaluator
 * written here, straight from the rules, over the same episodes in memory.
 *
 * Reproduce a property run with QUERY_SEED=<seed from the test title>.
 */

// ---- parser: good queries -----------------------------------------------------------------

const exact = (field: StringField, value: string, key: string | null = null): QueryNode => ({ type: 'exact', field, key, value });
const prefix = (field: StringField, p: string, key: string | null = null): QueryNode => ({ type: 'prefix', field, key, prefix: p });
const present = (field: StringField, key: string | null = null): QueryNode => ({ type: 'present', field, key });
const text = (field: StringField | null, t: string, key: string | null = null): QueryNode => ({ type: 'text', field, key, text: t });
const and = (...items: QueryNode[]): QueryNode => ({ type: 'and', items });
const or = (...items: QueryNode[]): QueryNode => ({ type: 'or', items });
const not = (item: QueryNode): QueryNode => ({ type: 'not', item });
const H = 3_600_000;
const D = 24 * H;

const GOOD: Array<[string, QueryNode | null]> = [
  ['', null],
  ['   \t ', null],
  ['service:db', exact('service', 'db')],
  ['Service:DB', exact('service', 'DB')],
  ['SERVICE:db-1.eu/x:y', exact('service', 'db-1.eu/x:y')],
  ['service:"my svc"', exact('service', 'my svc')],
  ['service:"a \\"q\\" \\\\ b"', exact('service', 'a "q" \\ b')],
  ['service:""', exact('service', '')],
  ['service:"lit*"', exact('service', 'lit*')],
  ['service:Pre*', prefix('service', 'Pre')],
  ['service:"my s"*', prefix('service', 'my s')],
  ['note:*', present('note')],
  ['alert:*', present('alert')],
  ['data.k8s.ns:*', present('data', 'k8s.ns')],
  ['DATA.Env:prod', exact('data', 'prod', 'Env')],
  ['data.a/b-c_d:x', exact('data', 'x', 'a/b-c_d')],
  ['data.env~"Eu West"', text('data', 'Eu West', 'env')],
  ['note~disk', text('note', 'disk')],
  ['note~"a*b?"', text('note', 'a*b?')],
  ['alert~High?PU', text('alert', 'High?PU')],
  ['kind:incident state:open', and(exact('kind', 'incident'), exact('state', 'open'))],
  ['kind:incident AND state:open', and(exact('kind', 'incident'), exact('state', 'open'))],
  ['a OR b c', or(text(null, 'a'), and(text(null, 'b'), text(null, 'c')))],
  ['a b OR c', or(and(text(null, 'a'), text(null, 'b')), text(null, 'c'))],
  ['(a OR b) c', and(or(text(null, 'a'), text(null, 'b')), text(null, 'c'))],
  ['a or b', and(text(null, 'a'), text(null, 'or'), text(null, 'b'))],
  ['"OR"', text(null, 'OR')],
  ['-service:db', not(exact('service', 'db'))],
  ['-(kind:incident OR note:*)', not(or(exact('kind', 'incident'), present('note')))],
  ['-disk', not(text(null, 'disk'))],
  ['-"two words"', not(text(null, 'two words'))],
  ['((x))', text(null, 'x')],
  ['x-y', text(null, 'x-y')],
  ['Ünïcode', text(null, 'Ünïcode')],
  ['duration>5m', { type: 'compare', field: 'duration', op: '>', ms: 5 * 60_000 }],
  ['duration>=1.5h', { type: 'compare', field: 'duration', op: '>=', ms: 1.5 * H }],
  ['duration<30', { type: 'compare', field: 'duration', op: '<', ms: 30_000 }],
  ['Duration<=2d', { type: 'compare', field: 'duration', op: '<=', ms: 2 * D }],
  ['opened<7d', { type: 'compare', field: 'opened', op: '<', ms: 7 * D }],
  ['opened>1w', { type: 'compare', field: 'opened', op: '>', ms: 7 * D }],
  ['duration>0', { type: 'compare', field: 'duration', op: '>', ms: 0 }],
  ['last:90d', { type: 'last', ms: 90 * D }],
  ['service:x(y)', and(exact('service', 'x'), text(null, 'y'))],
];

for (const [q, expected] of GOOD) {
  test(`parses ${JSON.stringify(q)}`, (t) => {
    t.deepEqual(parseQuery(q), expected);
  });
}

// ---- parser: bad queries ------------------------------------------------------------------

const BAD: Array<[string, string]> = [
  ['foo:bar', 'unknown field "foo" at column 1'],
  ['kind:x -foo:bar', 'unknown field "foo" at column 9'],
  ['service:', 'expected a value after "service:" at column 9'],
  ['service: db', 'expected a value after "service:" at column 9'],
  ['(service:)', 'expected a value after "service:" at column 10'],
  ['note:"abc', 'unclosed quote at column 6'],
  ['"abc\\"', 'unclosed quote at column 1'],
  ['kind:x a) b', 'unmatched ")" at column 9'],
  [')', 'unmatched ")" at column 1'],
  ['(a OR b', 'unclosed "(" (missing ")") at column 1'],
  ['()', 'empty parentheses "()" at column 1'],
  ['duration>5x', '"5x" is not a duration (use a number with s, m, h, d or w) at column 10'],
  ['duration>-5m', '"-5m" is not a duration (use a number with s, m, h, d or w) at column 10'],
  ['duration>5M', '"5M" is not a duration (use a number with s, m, h, d or w) at column 10'],
  ['last:', 'expected a value after "last:" at column 6'],
  ['service:ab*c', '"*" is only allowed at the end of a value at column 11'],
  ['duration:5m', '"duration" needs a comparison such as duration>5m at column 1'],
  ['opened~5m', '"opened" needs a comparison such as opened<7d at column 1'],
  ['last>5d', '"last" takes ":" and a time span, as in last:90d at column 1'],
  ['service>x', '"service" can\'t be compared with ">" (use service:value or service~text) at column 8'],
  ['service=x', '"=" is not an operator (use service:value) at column 8'],
  ['-', '"-" must be followed by a term or a group, as in -service:db or -(kind:incident OR note:*) at column 1'],
  ['a - b', '"-" must be followed by a term or a group, as in -service:db or -(kind:incident OR note:*) at column 3'],
  ['--a', '"-" must be followed by a term or a group, as in -service:db or -(kind:incident OR note:*) at column 1'],
  ['-OR', '"-" must be followed by a term or a group, as in -service:db or -(kind:incident OR note:*) at column 1'],
  ['a OR', '"OR" needs a term on each side at column 3'],
  ['OR a', '"OR" needs a term on each side at column 1'],
  ['a AND OR b', '"AND" needs a term on each side at column 3'],
  ['(a AND)', '"AND" needs a term on each side at column 4'],
  ['data.:x', 'expected a key after "data." at column 6'],
  ['data:x', '"data" needs a key, as in data.env:prod at column 1'],
  ['data.ké:x', '"é" can\'t be in a data key (use letters, digits, _ . - /) at column 7'],
  ['disk*', '"*" is not a wildcard in a text match (it already matches anywhere; use ? for any one character, or quote the "*") at column 5'],
  ['note~a*b', '"*" is not a wildcard in a text match (it already matches anywhere; use ? for any one character, or quote the "*") at column 7'],
  ['note~"a"*', '"*" is not a wildcard in a text match (it already matches anywhere; use ? for any one character, or quote the "*") at column 9'],
  ['service:"x"y', 'unexpected "y" after the closing quote at column 12'],
  ['"x"y', 'unexpected "y" after the closing quote at column 4'],
  ['ab"c', 'unexpected quote inside a word (quote the whole value, as in service:"my service") at column 3'],
  ['"a\\nb"', 'unknown escape "\\n" in a quoted string (only \\" and \\\\ are allowed) at column 3'],
  [':x', 'expected a field name before ":" at column 1'],
  ['é:x', 'unknown field "é" at column 1'],
  ['ü service:', 'expected a value after "service:" at column 11'], // columns count characters, not bytes
  ['x'.repeat(1001), 'query is too long (1001 characters, at most 1000) at column 1001'],
  [`${'('.repeat(33)}a${')'.repeat(33)}`, 'the query is nested too deeply (at most 32 levels) at column 33'],
  [`${'-('.repeat(17)}a${')'.repeat(17)}`, 'the query is nested too deeply (at most 32 levels) at column 33'],
];

for (const [q, message] of BAD) {
  test(`rejects ${JSON.stringify(q.length > 40 ? `${q.slice(0, 40)}…` : q)}`, (t) => {
    const e = t.throws(() => parseQuery(q), { instanceOf: AppError, message });
    t.is(e?.code, 'bad_query');
    t.is(e?.status, 400);
  });
}

test('accepts 1000 characters and 32 levels', (t) => {
  t.notThrows(() => parseQuery('x'.repeat(1000)));
  t.notThrows(() => parseQuery(`${'('.repeat(32)}a${')'.repeat(32)}`));
});

// ---- the reference evaluator ----------------------------------------------------------------

interface Episode {
  id: string;
  kind: string;
  state: string;
  service: string;
  t_open_ms: number;
  t_close_ms: number | null;
  decision: string;
  outcome: string;
  result: string;
  note: string | null;
  alerts: string[];
  data: Array<[string, string]>;
}

/** The values a string field has on an episode (none for a NULL note, one per alert / data row). */
function valuesOf(ep: Episode, field: StringField, key: string | null): string[] {
  switch (field) {
    case 'note':
      return ep.note === null ? [] : [ep.note];
    case 'alert':
      return ep.alerts;
    case 'data':
      return ep.data.filter(([k]) => k === key).map(([, v]) => v);
    default:
      return [ep[field]];
  }
}

/** Case-insensitive containment by code points; `?` in the pattern is any one character. */
function contains(value: string, pattern: string): boolean {
  const s = Array.from(value.toLowerCase());
  const p = Array.from(pattern.toLowerCase());
  for (let i = 0; i + p.length <= s.length; i++) {
    if (p.every((c, j) => c === '?' || c === s[i + j])) return true;
  }
  return false;
}

function compare(a: number, op: CompareOp, b: number): boolean {
  return op === '<' ? a < b : op === '<=' ? a <= b : op === '>' ? a > b : a >= b;
}

function evaluate(n: QueryNode, ep: Episode, now: number): boolean {
  switch (n.type) {
    case 'and':
      return n.items.every((i) => evaluate(i, ep, now));
    case 'or':
      return n.items.some((i) => evaluate(i, ep, now));
    case 'not':
      return !evaluate(n.item, ep, now);
    case 'exact':
      return valuesOf(ep, n.field, n.key).some((v) => v === n.value);
    case 'prefix':
      return valuesOf(ep, n.field, n.key).some((v) => v.startsWith(n.prefix));
    case 'present':
      return valuesOf(ep, n.field, n.key).length > 0;
    case 'text': {
      const values = n.field === null ? [ep.service, ...(ep.note === null ? [] : [ep.note]), ...ep.alerts] : valuesOf(ep, n.field, n.key);
      return values.some((v) => contains(v, n.text));
    }
    case 'compare':
      return compare(n.field === 'duration' ? (ep.t_close_ms ?? now) - ep.t_open_ms : now - ep.t_open_ms, n.op, n.ms);
    case 'last':
      return now - ep.t_open_ms <= n.ms;
  }
}

// ---- random episodes ------------------------------------------------------------------------

class Rng {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }
}

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const SERVICES = [
  'db',
  'DB',
  'db-primary',
  'Db.Primary',
  'café',
  'CAFÉ',
  'Über_svc',
  'über_SVC',
  'straße',
  'STRASSE',
  'svc%1',
  'svc_1',
  'svcX1',
  'a!b',
  'a!!b',
  'api/v2',
  'x\\y',
  'OR',
  'or',
  'İstanbul',
  'web-01',
  'web-10',
  'pay.eu-1',
  'ñandú',
  '𝔘nicode',
  'quote"d',
  'star*svc',
];
const OUTCOMES = ['mitigated', 'escalated', 'dismissed', 'expired'];
const RESULTS = ['none', 'restarted', 'rolled-back', 'scaled_up', '50%', 'a!b', 'x_y'];
const NOTE_WORDS = [
  'Disk',
  'full',
  'FULL',
  'on',
  '/var',
  'Ünïcode',
  'straße',
  'STRASSE',
  '100%',
  'cpu',
  'under_score',
  'bang!',
  'back\\slash',
  '"quoted"',
  'web-01',
  'Café',
  'au',
  'lait',
  'OR',
  'and',
  'x?y',
  'star*',
  'ÄÖÜ',
  'äöü',
  '(paren)',
  'a:b',
  'ß',
];
const ALERTS = [
  'HighCPU',
  'highcpu',
  'DiskFull',
  'disk_full',
  'Disk%Full',
  'Disk*Full',
  'Latency>1s',
  'Ünreachable',
  'ünreachable',
  'Straße-Down',
  'api.5xx',
  'a!b_c',
  'x\\y',
  'Node Down',
  'OR',
];
const DATA_KEYS = ['env', 'Env', 'region', 'k8s.ns', 'team-name', 'a/b', 'x_y'];
const DATA_VALUES = [
  'prod',
  'Prod',
  'PROD',
  'staging',
  'eu-west-1',
  'EU-West-1',
  'größe',
  'GRÖSSE',
  '50%',
  'a_b',
  'aXb',
  'x!y',
  'ns/kube-system',
  '10.0.0.1',
  'é',
  'two words',
];
const NICE_AGES = [H, D, 7 * D, 30 * D, 90 * D, 5 * 60_000];
const NICE_DURATIONS = [30_000, 5 * 60_000, H, 1.5 * H, D, 2 * D, 0];
/** Spans the queries use: text as written, and its value in ms. */
const SPANS: Array<[string, number]> = [
  ['30s', 30_000],
  ['30', 30_000],
  ['0.5m', 30_000],
  ['5m', 5 * 60_000],
  ['1h', H],
  ['1.5h', 1.5 * H],
  ['90m', 1.5 * H],
  ['1d', D],
  ['2d', 2 * D],
  ['7d', 7 * D],
  ['1w', 7 * D],
  ['30d', 30 * D],
  ['90d', 90 * D],
  ['0', 0],
  ['0s', 0],
];

function randomEpisodes(rng: Rng, count: number): Episode[] {
  const eps: Episode[] = [];
  for (let i = 0; i < count; i++) {
    const age = rng.chance(0.25) ? rng.pick(NICE_AGES) : rng.int(200 * D);
    const t_open_ms = NOW - age;
    const open = rng.chance(0.3);
    let t_close_ms: number | null = null;
    if (!open) t_close_ms = t_open_ms + Math.min(age, rng.chance(0.3) ? rng.pick(NICE_DURATIONS) : rng.int(5 * D));
    const noteRoll = rng.next();
    const note = noteRoll < 0.3 ? null : noteRoll < 0.34 ? '' : Array.from({ length: 1 + rng.int(4) }, () => rng.pick(NOTE_WORDS)).join(' ');
    const alerts = Array.from({ length: rng.int(4) }, () => rng.pick(ALERTS));
    const data = new Map<string, [string, string]>();
    for (let j = rng.int(5); j > 0; j--) {
      const pair: [string, string] = [rng.pick(DATA_KEYS), rng.pick(DATA_VALUES)];
      data.set(JSON.stringify(pair), pair);
    }
    eps.push({
      id: `ep-${String(i).padStart(4, '0')}`,
      kind: rng.pick(['incident', 'notice']),
      state: open ? 'open' : 'closed',
      service: rng.pick(SERVICES),
      t_open_ms,
      t_close_ms,
      decision: rng.pick(['act', 'abstain']),
      outcome: rng.pick(OUTCOMES),
      result: rng.pick(RESULTS),
      note,
      alerts,
      data: [...data.values()],
    });
  }
  return eps;
}

async function insertEpisodes(db: Knex, eps: Episode[]): Promise<void> {
  const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
  await db.batchInsert(
    'episodes',
    eps.map((e) => ({
      id: e.id,
      kind: e.kind,
      state: e.state,
      service: e.service,
      service_lc: e.service.toLowerCase(),
      open_service: null,
      alert_names: JSON.stringify(e.alerts),
      t_open: iso(e.t_open_ms),
      t_open_ms: e.t_open_ms,
      t_close: iso(e.t_close_ms),
      t_close_ms: e.t_close_ms,
      decision: e.decision,
      outcome: e.outcome,
      result: e.result,
      note: e.note,
      note_lc: e.note === null ? null : e.note.toLowerCase(),
    })),
    50,
  );
  const alerts = eps.flatMap((e) =>
    e.alerts.map((name, i) => ({
      episode_id: e.id,
      fingerprint: `fp-${i}`,
      name,
      name_lc: name.toLowerCase(),
      severity: 'critical',
      source: 'test',
      summary: `summary of ${name}`,
      joined_at: iso(e.t_open_ms),
      ended_at: null,
      end_status: null,
      baseline: '{}',
    })),
  );
  if (alerts.length > 0) await db.batchInsert('episode_alerts', alerts, 50);
  const data = eps.flatMap((e) => e.data.map(([key, value]) => ({ episode_id: e.id, key, value, value_lc: value.toLowerCase() })));
  if (data.length > 0) await db.batchInsert('episode_data', data, 50);
}

// ---- random queries -------------------------------------------------------------------------

const STRING_FIELDS: StringField[] = ['service', 'outcome', 'kind', 'decision', 'state', 'result', 'note', 'alert', 'data'];

/** A value to search for: mostly one the episodes have (so queries hit), sometimes re-cased or other. */
function someValue(rng: Rng, eps: Episode[], field: StringField, key: string | null): string {
  for (let tries = 0; tries < 10; tries++) {
    const values = valuesOf(rng.pick(eps), field, key);
    if (values.length > 0) return rng.pick(values);
  }
  return rng.pick(field === 'data' ? DATA_VALUES : field === 'alert' ? ALERTS : SERVICES);
}

function recase(rng: Rng, v: string): string {
  const r = rng.next();
  if (r < 0.6) return v;
  if (r < 0.7) return v.toUpperCase();
  if (r < 0.8) return v.toLowerCase();
  return Array.from(v, (c) => (rng.chance(0.5) ? c.toUpperCase() : c.toLowerCase())).join('');
}

function slice(rng: Rng, v: string): string {
  const cs = Array.from(v);
  const a = rng.int(cs.length + 1);
  const b = a + rng.int(cs.length - a + 1);
  return cs.slice(a, b).join('');
}

function randomLeaf(rng: Rng, eps: Episode[]): QueryNode {
  const r = rng.next();
  if (r < 0.1) {
    const [, ms] = rng.pick(SPANS);
    return { type: 'compare', field: rng.pick(['duration', 'opened'] as const), op: rng.pick(['<', '<=', '>', '>='] as const), ms };
  }
  if (r < 0.14) return { type: 'last', ms: rng.pick(SPANS)[1] };
  if (r < 0.27) {
    const source = rng.pick(['service', 'note', 'alert'] as const);
    const t = Array.from(recase(rng, slice(rng, someValue(rng, eps, source, null))), (c) => (rng.chance(0.1) ? '?' : c)).join('');
    return { type: 'text', field: null, key: null, text: t };
  }
  const field = rng.pick(STRING_FIELDS);
  const key = field === 'data' ? rng.pick(DATA_KEYS) : null;
  const value = someValue(rng, eps, field, key);
  const kind = rng.next();
  if (kind < 0.35) return { type: 'exact', field, key, value: rng.chance(0.1) ? '' : recase(rng, value) };
  if (kind < 0.6) {
    const p = recase(
      rng,
      Array.from(value)
        .slice(0, 1 + rng.int(Array.from(value).length))
        .join(''),
    );
    return p === '' ? { type: 'present', field, key } : { type: 'prefix', field, key, prefix: p };
  }
  if (kind < 0.68) return { type: 'present', field, key };
  const t = Array.from(recase(rng, slice(rng, value)), (c) => (rng.chance(0.1) ? '?' : c)).join('');
  return { type: 'text', field, key, text: t };
}

function randomNode(rng: Rng, eps: Episode[], depth: number): QueryNode {
  const r = rng.next();
  if (depth >= 4 || r < 0.4) return randomLeaf(rng, eps);
  if (r < 0.65) return { type: 'and', items: Array.from({ length: 2 + rng.int(3) }, () => randomNode(rng, eps, depth + 1)) };
  if (r < 0.9) return { type: 'or', items: Array.from({ length: 2 + rng.int(3) }, () => randomNode(rng, eps, depth + 1)) };
  return { type: 'not', item: randomNode(rng, eps, depth + 1) };
}

// ---- rendering queries as text ----------------------------------------------------------------

const quote = (v: string): string => `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
/** A value after an operator may be bare unless it is empty or holds whitespace, ( ) " or *. */
const bareValue = (v: string): boolean => v !== '' && !/[\s()"*]/u.test(v);
/** Free text also must not look like a term, a negation or a keyword. */
const bareText = (v: string): boolean => bareValue(v) && !/[:~<>=]/.test(v) && !v.startsWith('-') && v !== 'AND' && v !== 'OR';

function fieldName(rng: Rng, field: string, key: string | null): string {
  const name = rng.pick([field, field.toUpperCase(), field[0]!.toUpperCase() + field.slice(1)]);
  return key === null ? name : `${name}.${key}`;
}

function renderLeaf(rng: Rng, n: QueryNode): string {
  switch (n.type) {
    case 'exact':
      return `${fieldName(rng, n.field, n.key)}:${bareValue(n.value) && rng.chance(0.6) ? n.value : quote(n.value)}`;
    case 'prefix':
      return `${fieldName(rng, n.field, n.key)}:${bareValue(n.prefix) && rng.chance(0.6) ? n.prefix : quote(n.prefix)}*`;
    case 'present':
      return `${fieldName(rng, n.field, n.key)}:${rng.chance(0.9) ? '*' : '""*'}`;
    case 'text':
      if (n.field === null) return bareText(n.text) && rng.chance(0.6) ? n.text : quote(n.text);
      return `${fieldName(rng, n.field, n.key)}~${bareValue(n.text) && rng.chance(0.6) ? n.text : quote(n.text)}`;
    case 'compare':
    case 'last': {
      const spans = SPANS.filter(([, ms]) => ms === n.ms);
      const span = rng.pick(spans)[0];
      return n.type === 'last' ? `${fieldName(rng, 'last', null)}:${span}` : `${fieldName(rng, n.field, null)}${n.op}${span}`;
    }
    default:
      throw new Error(`not a leaf: ${n.type}`);
  }
}

function render(rng: Rng, n: QueryNode): string {
  const group = (s: string): string => `(${rng.chance(0.2) ? ' ' : ''}${s}${rng.chance(0.2) ? ' ' : ''})`;
  switch (n.type) {
    case 'and':
      return n.items
        .map((i) => (i.type === 'and' || i.type === 'or' ? group(render(rng, i)) : render(rng, i)))
        .reduce((acc, s) => `${acc}${rng.chance(0.7) ? ' ' : rng.chance(0.5) ? ' AND ' : '  '}${s}`);
    case 'or':
      return n.items.map((i) => (i.type === 'or' || (i.type === 'and' && rng.chance(0.4)) ? group(render(rng, i)) : render(rng, i))).join(' OR ');
    case 'not':
      return i_isLeaf(n.item) && rng.chance(0.7) ? `-${renderLeaf(rng, n.item)}` : `-${group(render(rng, n.item))}`;
    default:
      return rng.chance(0.1) ? group(renderLeaf(rng, n)) : renderLeaf(rng, n);
  }
}

const i_isLeaf = (n: QueryNode): boolean => n.type !== 'and' && n.type !== 'or' && n.type !== 'not';

// ---- the property test ------------------------------------------------------------------------

const EPISODES = 200;
const QUERIES = 300;

async function propertyRun(t: ExecutionContext, seed: number): Promise<void> {
  t.log(`seed ${seed} (rerun with QUERY_SEED=${seed}), engine ${ENGINE}`);
  const rng = new Rng(seed);
  const eps = randomEpisodes(rng, EPISODES);
  const store = await createTestStore();
  const db = openDb({ databaseUrl: store.databaseUrl, dataDir: store.dataDir }, { warn: (m) => t.log(m) });
  try {
    await migrate(db);
    await insertEpisodes(db, eps);
    t.is(Number((await db('episodes').count({ n: '*' }).first())?.n), EPISODES);
    let failures = 0;
    let hits = 0;
    let nonTrivial = 0;
    for (let i = 0; i < QUERIES; i++) {
      let node: QueryNode;
      let q: string;
      do {
        node = randomNode(rng, eps, 0);
        q = `${rng.chance(0.1) ? ' ' : ''}${render(rng, node)}${rng.chance(0.1) ? '\t' : ''}`;
      } while (Array.from(q).length > 1000);
      let parsed: QueryNode | null;
      try {
        parsed = parseQuery(q);
      } catch (e) {
        t.fail(`seed ${seed} query #${i} ${JSON.stringify(q)} did not parse: ${(e as Error).message}`);
        failures++;
        continue;
      }
      if (JSON.stringify(parsed) !== JSON.stringify(node)) {
        t.deepEqual(parsed, node, `seed ${seed} query #${i} ${JSON.stringify(q)} parsed to another tree`);
        failures++;
        continue;
      }
      const expected = eps
        .filter((e) => evaluate(node, e, NOW))
        .map((e) => e.id)
        .sort();
      // Alternate the two ways alert/data terms are looked up (IN by index, correlated EXISTS):
      // both must give the reference answer.
      const selective = i % 2 === 0;
      const builder = applyQuery(db('episodes').select('episodes.id'), parsed!, NOW, { selective: () => selective });
      const actual = ((await builder) as Array<{ id: string }>).map((r) => r.id).sort();
      if (expected.length > 0) hits++;
      if (expected.length > 0 && expected.length < EPISODES) nonTrivial++;
      if (JSON.stringify(actual) !== JSON.stringify(expected)) {
        failures++;
        const missing = expected.filter((id) => !actual.includes(id));
        const extra = actual.filter((id) => !expected.includes(id));
        const show = (id: string | undefined) => JSON.stringify(eps.find((e) => e.id === id));
        t.fail(
          [
            `seed ${seed} query #${i} on ${ENGINE}: ${JSON.stringify(q)}`,
            `sql: ${builder.toString()}`,
            `missing from the database's answer (${missing.length}): ${missing.slice(0, 5).join(' ')} e.g. ${show(missing[0])}`,
            `extra in the database's answer (${extra.length}): ${extra.slice(0, 5).join(' ')} e.g. ${show(extra[0])}`,
          ].join('\n'),
        );
      }
      if (failures >= 5) break;
    }
    t.log(`${QUERIES} queries over ${EPISODES} episodes: ${hits} matched something, ${nonTrivial} matched some but not all`);
    t.true(nonTrivial > QUERIES / 3, 'most queries should select a proper subset');
    t.is(failures, 0);
  } finally {
    await db.destroy();
    await store.cleanup();
  }
}

const envSeed = process.env.QUERY_SEED?.trim();
if (envSeed) {
  const seed = Number(envSeed) >>> 0;
  test(`property: ${QUERIES} random queries agree with the reference evaluator (seed ${seed} from QUERY_SEED)`, (t) => propertyRun(t, seed));
} else {
  // Fixed seeds keep CI deterministic; QUERY_SEED explores others (docs/query-language.md).
  for (const seed of [20261122, 7]) {
    test(`property: ${QUERIES} random queries agree with the reference evaluator (seed ${seed})`, (t) => propertyRun(t, seed));
  }
}

// ---- the tables are searched by the database ---------------------------------------------------

test('alerts and data are searched in their own tables, not in episodes.alert_names', async (t) => {
  const store = await createTestStore();
  const db = openDb({ databaseUrl: store.databaseUrl, dataDir: store.dataDir }, { warn: (m) => t.log(m) });
  try {
    await migrate(db);
    const ep: Episode = {
      id: 'ep-1',
      kind: 'incident',
      state: 'closed',
      service: 'Checkout',
      t_open_ms: NOW - H,
      t_close_ms: NOW - 1000,
      decision: 'act',
      outcome: 'mitigated',
      result: 'none',
      note: null,
      alerts: ['RealAlert'],
      data: [['env', 'Prod']],
    };
    await insertEpisodes(db, [ep]);
    // A decoy in the JSON copy that the query language must not read.
    await db('episodes').update({ alert_names: JSON.stringify(['DecoyAlert']) });
    const ids = async (q: string) => ((await applyQuery(db('episodes').select('episodes.id'), parseQuery(q)!, NOW)) as Array<{ id: string }>).map((r) => r.id);
    t.deepEqual(await ids('alert:RealAlert'), ['ep-1']);
    t.deepEqual(await ids('alert:DecoyAlert'), []);
    t.deepEqual(await ids('realal'), ['ep-1']);
    t.deepEqual(await ids('decoy'), []);
    t.deepEqual(await ids('data.env:Prod'), ['ep-1']);
    t.deepEqual(await ids('data.env:prod'), []);
    t.deepEqual(await ids('-note:*'), ['ep-1']);

    const sql = (q: string) => applyQuery(db('episodes').select('episodes.id'), parseQuery(q)!, NOW).toSQL();
    t.regex(sql('alert:RealAlert').sql, /episode_alerts/);
    t.regex(sql('data.env:*').sql, /episode_data/);
    t.regex(sql('disk').sql, /episode_alerts/);
    // Values travel as bindings, never inside the SQL text.
    const s = sql('service:"x\' or 1=1 --" note~"50%_!" data.env:Wéird');
    t.false(s.sql.includes('or 1=1'));
    t.false(s.sql.includes('Wéird'));
    t.true(s.bindings.includes("x' or 1=1 --"));
    t.true(s.bindings.includes('%50!%!_!!%'));
  } finally {
    await db.destroy();
    await store.cleanup();
  }
});
