import type { AlertSeverity, NormalisedAlert, NormaliserPlugin } from '../../../host/plugins/contract.ts';

/**
 * Splunk Enterprise / Cloud webhook alert action (`result`, `sid`, `results_link`, `search_name`,
 * `owner`, `app`) and the Splunk On-Call (VictorOps) REST endpoint body (`message_type`,
 * `entity_id`, `state_message`, …). See README.md for the mapping and the decisions behind it.
 */

type Obj = Record<string, unknown>;

/**
 * `result.severity` / `result.urgency` as a number: the saved-search scale (1 debug … 6 fatal)
 * and the ITSI scale (1 info … 6 critical) fall into the same three bands.
 */
const SEVERITY_NUMBER: Readonly<Record<string, AlertSeverity>> = { '1': 'info', '2': 'info', '3': 'warning', '4': 'warning', '5': 'critical', '6': 'critical' };

/**
 * `result.severity` / `result.urgency` as a word: Enterprise Security urgency, the saved-search
 * words, and the common words. `low` follows ES (info), not ITSI's "3 low".
 */
const SEVERITY_WORD: Readonly<Record<string, AlertSeverity>> = {
  critical: 'critical',
  high: 'critical',
  severe: 'critical',
  fatal: 'critical',
  medium: 'warning',
  warning: 'warning',
  warn: 'warning',
  error: 'warning',
  low: 'info',
  informational: 'info',
  info: 'info',
  debug: 'info',
};

/** Splunk On-Call `message_type`: its severity, and whether it clears the incident. */
const MESSAGE_TYPE: Readonly<Record<string, { severity: AlertSeverity; resolved: boolean }>> = {
  CRITICAL: { severity: 'critical', resolved: false },
  WARNING: { severity: 'warning', resolved: false },
  INFO: { severity: 'info', resolved: false },
  ACKNOWLEDGEMENT: { severity: 'warning', resolved: false },
  RECOVERY: { severity: 'warning', resolved: true },
};

/**
 * The `result` fields that say what a search fired about; with `app`, `owner` and the search
 * name they make the fingerprint (the sid is new on every run, so it cannot be the id).
 */
const RESULT_IDENTITY = ['service', 'host', 'source', 'sourcetype', 'index', 'src', 'dest'];
const IDENTITY = ['app', 'owner', ...RESULT_IDENTITY.map((k) => `result.${k}`)];

/** On-Call fields never copied to labels: the entity and message are mapped, secrets are dropped. */
const SECRETISH = /key|token|secret|password|passwd|auth/i;

/** A table's own entry for `key` (never an inherited property such as `constructor`). */
const lookup = <T>(table: Readonly<Record<string, T>>, key: string | null | undefined): T | undefined =>
  key != null && Object.hasOwn(table, key) ? table[key] : undefined;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : typeof v === 'number' ? String(v) : null);

const isEnterprise = (b: Obj): boolean => typeof b.sid === 'string' && typeof b.results_link === 'string' && isObj(b.result);
const isOnCall = (b: Obj): boolean => typeof b.message_type === 'string' && str(b.entity_id) !== null;

/**
 * The saved search's name from a scheduler sid: `[rt_]scheduler__<owner>__<app>__<name>_at_<time>_<n>`
 * gives `<name>`; an older single-underscore sid gives everything before `_at_`; an ad hoc sid none.
 */
function nameFromSid(sid: string): string | null {
  const m = /^(?:rt_)?(.+?)_at_\d+_\d+(?:\.\d+)?$/.exec(sid.trim());
  if (m?.[1] === undefined) return null;
  const parts = m[1].split('__');
  if (parts.length >= 4 && parts[0] === 'scheduler') return parts.slice(3).join('__') || null;
  return m[1];
}

function severityOf(result: Obj): AlertSeverity {
  for (const k of ['severity', 'urgency']) {
    const v = str(result[k])?.toLowerCase();
    if (v === undefined) continue;
    const mapped = lookup(SEVERITY_NUMBER, v) ?? lookup(SEVERITY_WORD, v);
    if (mapped !== undefined) return mapped;
  }
  return 'warning';
}

function enterprise(body: Obj): NormalisedAlert {
  const result = body.result as Obj;
  const sid = body.sid as string;
  const labels: Obj = { result, sid, results_link: body.results_link };
  for (const k of ['search_name', 'app', 'owner']) if (str(body[k]) !== null) labels[k] = body[k];
  return {
    name: str(body.search_name) ?? nameFromSid(sid) ?? 'splunk alert',
    severity: severityOf(result),
    status: 'firing',
    service: str(result.service) ?? str(result.host),
    labels,
    summary: str(result._raw) ?? (body.results_link as string),
    id: null,
    identity: IDENTITY,
  };
}

function onCall(body: Obj): NormalisedAlert {
  const type = lookup(MESSAGE_TYPE, (body.message_type as string).trim().toUpperCase());
  const labels: Obj = {};
  for (const [k, v] of Object.entries(body)) {
    if (k === 'state_message' || SECRETISH.test(k) || isObj(v)) continue;
    labels[k] = v;
  }
  const entity = str(body.entity_id)!;
  return {
    name: str(body.entity_display_name) ?? entity,
    severity: type?.severity ?? 'warning',
    status: type?.resolved === true ? 'resolved' : 'firing',
    service: null,
    labels,
    summary: str(body.state_message) ?? '',
    id: entity,
  };
}

function detect(body: unknown): boolean {
  return isObj(body) && (isEnterprise(body) || isOnCall(body));
}

function normalise(body: unknown): NormalisedAlert[] | null {
  if (!isObj(body)) return null;
  if (isEnterprise(body)) return [enterprise(body)];
  if (isOnCall(body)) return [onCall(body)];
  return null;
}

const plugin: NormaliserPlugin = { normalise, detect };
export default plugin;
