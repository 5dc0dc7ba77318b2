import type { AlertSeverity, NormalisedAlert, NormaliserPlugin } from '../../../host/plugins/contract.ts';

/**
 * Kibana alerting webhook connector, Elasticsearch Watcher webhook and OpenSearch Alerting custom
 * webhook bodies. All three are user-written mustache templates, so the body is read by shape;
 * see README.md for the shapes, the field mapping and the decisions taken.
 */

type Obj = Record<string, unknown>;

/** Elastic Security `rule.severity`, Watcher `metadata.severity`; anything else is `warning`. */
const ELASTIC_SEVERITY: Record<string, AlertSeverity> = {
  critical: 'critical',
  high: 'critical',
  medium: 'warning',
  warning: 'warning',
  low: 'info',
  info: 'info',
  informational: 'info',
};

/** OpenSearch `ctx.trigger.severity`, 1 the highest. */
const OPENSEARCH_SEVERITY: Record<string, AlertSeverity> = {
  '1': 'critical',
  '2': 'critical',
  '3': 'warning',
  '4': 'info',
  '5': 'info',
};

/** Values a mustache template leaves when it renders nothing useful. */
const JUNK = new Set(['', '[object Object]']);

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | null {
  if (typeof v === 'string') return JUNK.has(v.trim()) ? null : v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return null;
}

function lower(v: unknown): string {
  return typeof v === 'string' ? v.trim().toLowerCase() : '';
}

/** A value that is still an unrendered mustache placeholder, such as `{{alert.id}}`. */
function isPlaceholder(v: string): boolean {
  return /\{\{[^}]*\}\}/.test(v);
}

/** A real (rendered) value, or null. */
function rendered(v: unknown): string | null {
  const s = str(v);
  return s === null || isPlaceholder(s) ? null : s;
}

/** `body[a.b.c]` read either as the nested path or as one flat dotted key (Keep's style). */
function at(body: Obj, dotted: string): unknown {
  if (dotted in body) return body[dotted];
  let v: unknown = body;
  for (const part of dotted.split('.')) {
    if (!isObj(v)) return undefined;
    v = v[part];
  }
  return v;
}

function first(body: Obj, paths: string[]): string | null {
  for (const p of paths) {
    const v = str(at(body, p));
    if (v !== null) return v;
  }
  return null;
}

/** The body's fields minus the ones already used and the junk a template leaves behind. */
function remainingLabels(body: Obj, used: ReadonlySet<string>): Obj {
  const out: Obj = {};
  const keep = (v: unknown): unknown => {
    if (typeof v === 'string') return JUNK.has(v.trim()) ? null : v;
    if (Array.isArray(v)) return v;
    if (isObj(v)) {
      const o: Obj = {};
      for (const [k, x] of Object.entries(v)) o[k] = keep(x);
      return o;
    }
    return v;
  };
  for (const [k, v] of Object.entries(body)) if (!used.has(k)) out[k] = keep(v);
  return out;
}

// ---------------------------------------------------------------- Kibana alerting

/** Kibana connector bodies: Keep's flat template (`actionGroup`, `ruleId`, `rule.type`) or nested `{alert, rule, context}`. */
function isKibana(body: unknown): body is Obj {
  if (!isObj(body)) return false;
  if (typeof body.actionGroup === 'string' && ['ruleId', 'rule.id', 'rule.type', 'name'].some((k) => k in body)) return true;
  if (isObj(body.alert) && typeof body.alert.actionGroup === 'string') return true;
  if (typeof body.kibanaBaseUrl === 'string') return true;
  if (isObj(body.context) && typeof body.context.alertDetailsUrl === 'string') return true;
  return isObj(body.rule) && typeof body.rule.id === 'string' && typeof body.rule.type === 'string';
}

/** Elastic Security risk score bands (0–21 low, 22–47 medium, 48–73 high, 74–100 critical). */
function riskSeverity(score: string | null): AlertSeverity | null {
  if (score === null) return null;
  const n = Number(score);
  if (!Number.isFinite(n)) return null;
  return n >= 48 ? 'critical' : n >= 22 ? 'warning' : 'info';
}

function kibanaSeverity(body: Obj, actionGroup: string): AlertSeverity {
  const named = first(body, ['severity', 'rule.severity', 'context.rule.severity', 'ruleSeverity']);
  if (named !== null && ELASTIC_SEVERITY[lower(named)] !== undefined) return ELASTIC_SEVERITY[lower(named)]!;
  const risk = riskSeverity(first(body, ['risk_score', 'rule.risk_score', 'context.rule.risk_score', 'riskScore']));
  if (risk !== null) return risk;
  // Stack rules carry no severity: `*.warning` groups are warning, and so is every other group
  // (unknown is warning), so the action group never raises or lowers it.
  void actionGroup;
  return 'warning';
}

/** The group an alert instance stands for, when the template says so (see README). */
function kibanaService(body: Obj, alertId: string | null, summary: string): string | null {
  const named = rendered(first(body, ['service', 'service.name', 'context.service', 'context.service.name']));
  if (named !== null) return named;
  const group = at(body, 'context.group');
  if (typeof group === 'string' && rendered(group) !== null) return group;
  if (alertId !== null && rendered(alertId) !== null && summary.includes(`group: ${alertId})`)) return alertId;
  return null;
}

const KIBANA_USED = new Set(['name', 'description', 'id', 'fingerprint', 'service']);
const KIBANA_IDENTITY = ['ruleId', 'rule.id', 'rule.type', 'rule.spaceId', 'alert.id', 'alertId'];

function normaliseKibana(body: Obj): NormalisedAlert[] | null {
  const ruleId = first(body, ['ruleId', 'rule.id', 'context.rule.id']);
  const name = first(body, ['name', 'rule.name', 'ruleName', 'context.rule.name']) ?? ruleId;
  if (name === null) return null;
  const actionGroup = first(body, ['actionGroup', 'alert.actionGroup']) ?? '';
  const groupName = first(body, ['alert.actionGroupName', 'actionGroupName', 'status']) ?? '';
  const resolved = lower(actionGroup) === 'recovered' || lower(groupName) === 'recovered';
  const alertId = first(body, ['alert.id', 'alertId', 'id', 'fingerprint']);
  const summary = first(body, ['description', 'context.reason', 'reason', 'context.message', 'message']) ?? '';
  const id = alertId === null ? null : ruleId === null ? null : `${ruleId}:${alertId}`;
  const labels = remainingLabels(body, KIBANA_USED);
  if (alertId !== null && !('alert' in body)) labels.alertId = alertId;
  const alert: NormalisedAlert = {
    name,
    severity: kibanaSeverity(body, actionGroup),
    status: resolved ? 'resolved' : 'firing',
    service: kibanaService(body, alertId, summary),
    labels,
    summary,
    id,
  };
  if (id === null) alert.identity = KIBANA_IDENTITY;
  return [alert];
}

// ---------------------------------------------------------------- Elasticsearch Watcher

/** The watch execution context, whether sent as an object, as a JSON string or bare. */
function watcherContext(body: unknown): Obj | null {
  if (!isObj(body)) return null;
  let payload = body.payload;
  if (typeof payload === 'string') {
    try {
      payload = JSON.parse(payload);
    } catch {
      return null;
    }
  }
  if (isObj(payload) && typeof payload.watch_id === 'string') return payload;
  // The bare ctx: `{{#toJson}}ctx{{/toJson}}` as the whole body.
  if (typeof body.watch_id === 'string' && isObj(body.trigger) && 'execution_time' in body) return body;
  return null;
}

function normaliseWatcher(body: Obj, ctx: Obj): NormalisedAlert[] | null {
  const watchId = str(ctx.watch_id);
  if (watchId === null) return null;
  const meta = isObj(ctx.metadata) ? ctx.metadata : {};
  const result = isObj(ctx.payload) ? ctx.payload : {};
  const triggeredAt = isObj(ctx.trigger) ? str(ctx.trigger.triggered_time) : null;
  const scalars = Object.fromEntries(Object.entries(result).filter(([, v]) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'));
  const { name: _n, severity: _s, service: _v, description: _d, message: _m, xpack: _x, ...metaRest } = meta;
  const status = lower(body.status);
  return [
    {
      name: str(meta.name) ?? watchId,
      severity: ELASTIC_SEVERITY[lower(meta.severity)] ?? 'warning',
      status: status === 'recovered' || status === 'resolved' ? 'resolved' : 'firing',
      service: str(meta.service),
      labels: { watchId, metadata: metaRest, payload: scalars },
      summary: str(meta.description) ?? str(meta.message) ?? (triggeredAt === null ? `Watch ${watchId} fired` : `Watch ${watchId} fired at ${triggeredAt}`),
      id: watchId,
    },
  ];
}

// ---------------------------------------------------------------- OpenSearch Alerting

function hasS4Keys(body: Obj): boolean {
  return Object.keys(body).some((k) => k.toLowerCase().startsWith('x-s4-'));
}

/** Keep-style (`trigger_name`), `monitor_name`, nested `{monitor, trigger}`, or SIGNL4-style (`X-S4-*`) templates. */
function isOpenSearch(body: unknown): body is Obj {
  if (!isObj(body)) return false;
  if (typeof body.trigger_name === 'string' || typeof body.monitor_name === 'string') return true;
  if (isObj(body.monitor) && isObj(body.trigger) && ('name' in body.monitor || 'name' in body.trigger)) return true;
  return hasS4Keys(body) && ('X-S4-ExternalID' in body || 'Trigger' in body || 'AlertMonitor' in body);
}

/** Field names that change on every send; kept out of the fingerprint when there is no id. */
const VOLATILE = /period|time|date|state|value|count|hits|results|message/i;

function normaliseOpenSearch(body: Obj): NormalisedAlert[] | null {
  const used = new Set<string>();
  const take = (paths: string[]): string | null => {
    for (const p of paths) {
      const v = str(at(body, p));
      if (v !== null) {
        if (p in body) used.add(p);
        return v;
      }
    }
    return null;
  };
  const s4 = hasS4Keys(body);
  const monitorId = take(['monitor.id', 'monitor_id', ...(s4 ? [] : ['id'])]);
  const triggerId = take(['trigger.id', 'trigger_id']);
  const externalId = take(['X-S4-ExternalID']);
  const name = take(['name', 'monitor.name', 'monitor_name', 'Trigger', 'trigger_name', 'trigger.name', 'Title', 'X-S4-ExternalID']);
  if (name === null) return null;
  const severity = first(body, ['severity', 'trigger.severity', 'Severity']);
  const summary = take(['message', 'Message', 'AlertMonitor', 'description']) ?? '';
  const status = lower(take(['X-S4-Status', 'status']));
  const service = rendered(take(['service']));
  const id = externalId ?? (monitorId === null ? null : triggerId === null ? monitorId : `${monitorId}:${triggerId}`);
  const labels = remainingLabels(body, used);
  const alert: NormalisedAlert = {
    name,
    severity: OPENSEARCH_SEVERITY[lower(severity)] ?? ELASTIC_SEVERITY[lower(severity)] ?? 'warning',
    status: status === 'resolved' || status === 'recovered' || status === 'closed' ? 'resolved' : 'firing',
    service,
    labels,
    summary,
    id,
  };
  if (id === null) alert.identity = Object.keys(labels).filter((k) => !VOLATILE.test(k));
  return [alert];
}

// ----------------------------------------------------------------

const plugin: NormaliserPlugin = {
  detect: (body) => isKibana(body) || watcherContext(body) !== null || isOpenSearch(body),
  normalise: (body) => {
    if (!isObj(body)) return null;
    const ctx = watcherContext(body);
    const alerts = isKibana(body) ? normaliseKibana(body) : ctx !== null ? normaliseWatcher(body, ctx) : isOpenSearch(body) ? normaliseOpenSearch(body) : null;
    return alerts;
  },
};

export default plugin;
