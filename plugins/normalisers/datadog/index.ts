import type { AlertSeverity, AlertStatus, NormalisedAlert, NormaliserPlugin } from '../../../host/plugins/contract.ts';

/**
 * Datadog Webhooks integration. The body is whatever JSON payload the user configured in the
 * Webhooks tile, with Datadog's `$VARIABLES` substituted: the default payload
 * (`body, last_updated, event_type, title, date, org{id,name}, id`) or a custom one using
 * `alert_transition`, `alert_type`, `alert_priority`, `alert_id`, `alert_cycle_key`, `tags`… .
 * See README.md for the mapping and the decisions behind it.
 */

type Obj = Record<string, unknown>;

/** `$ALERT_PRIORITY` (and `severity` in Keep's payload). */
const PRIORITY: Readonly<Record<string, AlertSeverity>> = { p1: 'critical', p2: 'critical', p3: 'warning', p4: 'info', p5: 'info' };

/** `$ALERT_TYPE`; `success` is handled apart (it means the monitor recovered). */
const ALERT_TYPE: Readonly<Record<string, AlertSeverity>> = { error: 'critical', warning: 'warning', info: 'info' };

/** Plain words a custom payload may put in `severity`. */
const SEVERITY_WORD: Readonly<Record<string, AlertSeverity>> = { critical: 'critical', error: 'critical', warning: 'warning', warn: 'warning', info: 'info' };

/** Datadog fields copied to `datadog.<label>` (first present source key wins). */
const FIELDS: ReadonlyArray<readonly [label: string, keys: readonly string[]]> = [
  ['event_type', ['event_type']],
  ['alert_transition', ['alert_transition']],
  ['alert_type', ['alert_type']],
  ['alert_status', ['alert_status']],
  ['priority', ['alert_priority', 'severity']],
  ['monitor_id', ['alert_id', 'monitor_id']],
  ['query', ['alert_query']],
  ['metric', ['alert_metric']],
  ['aggreg_key', ['aggreg_key']],
  ['alert_cycle_key', ['alert_cycle_key']],
  ['hostname', ['hostname']],
  ['event_id', ['event_id', 'id']],
  ['url', ['link', 'url']],
];

/** Only these identify an alert when there is no `alert_cycle_key` (see README: ids). */
const IDENTITY = ['datadog.monitor_id', 'datadog.scope'];

/** The notification prefixes Datadog puts before a monitor's name in the event title. */
const TITLE_PREFIX = /^\s*\[(?:P[1-5]|Triggered|Re-Triggered|Renotify|Warn|Warn Recovered|Recovered|No Data|Re-Warn)\b[^\]]*\]\s*/i;

/** A table's own entry for `key` (never an inherited property such as `constructor`). */
const lookup = <T>(table: Readonly<Record<string, T>>, key: string | null | undefined): T | undefined =>
  key != null && Object.hasOwn(table, key) ? table[key] : undefined;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An unrendered template variable such as `$EVENT_TITLE`: carries no information. */
const isPlaceholder = (s: string): boolean => /^\$[A-Z][A-Z0-9_]*$/.test(s.trim());

/** A string (or number) field with a real value: not empty, not an unrendered `$VARIABLE`. */
function text(body: Obj, ...keys: string[]): string | null {
  for (const k of keys) {
    const v = body[k];
    const s = typeof v === 'number' ? String(v) : typeof v === 'string' ? v.trim() : '';
    if (s !== '' && !isPlaceholder(s)) return s;
  }
  return null;
}

/** Parses `key:value` tags (a comma-separated string or an array); bare tags get "true". */
function parseTags(into: Map<string, string[]>, raw: unknown): void {
  const items = Array.isArray(raw) ? raw : typeof raw === 'string' ? raw.split(',') : [];
  for (const item of items) {
    if (typeof item !== 'string') continue;
    const tag = item.trim();
    if (tag === '' || isPlaceholder(tag)) continue;
    const at = tag.indexOf(':');
    const key = at < 0 ? tag : tag.slice(0, at).trim();
    const value = at < 0 ? 'true' : tag.slice(at + 1).trim();
    if (key === '') continue;
    const values = into.get(key) ?? [];
    if (!values.includes(value)) values.push(value);
    into.set(key, values);
  }
}

/** The title without its `[Triggered on {…}] ` / `[Recovered] ` / `[P1] ` prefixes, and the scope named in them. */
function splitTitle(title: string): { name: string; scope: string | null; recovered: boolean; priority: string | null } {
  let rest = title;
  let scope: string | null = null;
  let priority: string | null = null;
  let recovered = false;
  for (let m = TITLE_PREFIX.exec(rest); m !== null && m[0] !== ''; m = TITLE_PREFIX.exec(rest)) {
    const on = /\bon \{([^}]*)\}/.exec(m[0]);
    if (on?.[1] !== undefined && scope === null) scope = on[1].trim();
    if (/^\s*\[(?:Warn )?Recovered/i.test(m[0])) recovered = true;
    const p = /^\s*\[(P[1-5])\]/i.exec(m[0]);
    if (p?.[1] !== undefined && priority === null) priority = p[1];
    rest = rest.slice(m[0].length);
  }
  return { name: rest.trim(), scope, recovered, priority };
}

/** The message without Datadog's `%%%` markdown fences. */
function stripFences(s: string): string {
  return s
    .replace(/^\s*%%%\s*\n?/, '')
    .replace(/\n?\s*%%%\s*$/, '')
    .trim();
}

function severityOf(body: Obj, titlePriority: string | null): AlertSeverity {
  for (const v of [text(body, 'alert_priority'), text(body, 'severity'), text(body, 'priority'), titlePriority]) {
    const p = lookup(PRIORITY, v?.toLowerCase());
    if (p !== undefined) return p;
  }
  const word = lookup(SEVERITY_WORD, text(body, 'severity')?.toLowerCase());
  if (word !== undefined) return word;
  const type = text(body, 'alert_type')?.toLowerCase();
  if (type === 'success') return 'info';
  return lookup(ALERT_TYPE, type) ?? 'warning';
}

function statusOf(body: Obj, titleRecovered: boolean): AlertStatus {
  const transition = text(body, 'alert_transition')?.toLowerCase() ?? '';
  if (transition === 'recovered' || transition === 'warn recovered') return 'resolved';
  if (text(body, 'alert_type')?.toLowerCase() === 'success') return 'resolved';
  return titleRecovered ? 'resolved' : 'firing';
}

function titleOf(body: Obj): string | null {
  for (const k of ['alert_title', 'title', 'event_title']) {
    const v = body[k];
    if (typeof v === 'string' && v.trim() !== '') return v;
  }
  return null;
}

function detect(body: unknown): boolean {
  if (!isObj(body)) return false;
  if (['alert_transition', 'alert_cycle_key', 'aggreg_key', 'event_tags'].some((k) => typeof body[k] === 'string')) return true;
  if (typeof body.alert_type === 'string' && typeof body.event_type === 'string') return true;
  if (isObj(body.org) && 'id' in body.org && 'name' in body.org && body.last_updated !== undefined) return true;
  const title = titleOf(body);
  if (title !== null && /^\s*\[(?:Triggered|Recovered|P[1-5]\])/.test(title)) return true;
  return typeof body.body === 'string' && body.body.trimStart().startsWith('%%%');
}

function normalise(body: unknown): NormalisedAlert[] | null {
  if (!isObj(body)) return null;
  const title = titleOf(body);
  if (title === null && !detect(body)) return null;

  const split = splitTitle(title ?? '');
  const name = split.name !== '' ? split.name : (title?.trim() ?? 'datadog alert');

  const tags = new Map<string, string[]>();
  parseTags(tags, body.tags);
  parseTags(tags, body.event_tags);
  parseTags(tags, body.alert_scope);
  const labels: Obj = {};
  for (const [k, values] of tags) labels[k] = values.join(',');

  const datadog: Obj = {};
  for (const [label, keys] of FIELDS) {
    const v = text(body, ...keys);
    if (v !== null) datadog[label] = v;
  }
  const scope = text(body, 'alert_scope') ?? split.scope;
  if (scope !== null && !isPlaceholder(scope)) datadog.scope = scope;
  if (isObj(body.org)) {
    const org = { id: text(body.org, 'id'), name: text(body.org, 'name') };
    if (org.id !== null || org.name !== null) datadog.org = org;
  }
  labels.datadog = datadog;

  const rawSummary = body.body ?? body.text_only_msg ?? body.event_msg;
  const cycleKey = text(body, 'alert_cycle_key');
  return [
    {
      name,
      severity: severityOf(body, split.priority),
      status: statusOf(body, split.recovered),
      service: tags.get('service')?.[0] ?? null,
      labels,
      summary: typeof rawSummary === 'string' ? stripFences(rawSummary) : '',
      id: cycleKey,
      ...(cycleKey === null ? { identity: IDENTITY } : {}),
    },
  ];
}

const plugin: NormaliserPlugin = { normalise, detect };
export default plugin;
