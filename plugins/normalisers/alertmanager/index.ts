import type { AlertSeverity, AlertStatus, NormalisedAlert, NormaliserPlugin } from '../../../host/plugins/contract.ts';

/**
 * Prometheus Alertmanager webhooks (`version: "4"`), Grafana unified alerting (the same envelope
 * with `orgId`, `title`, `state`, `message`, `version: "1"` and per-alert extras), legacy Grafana
 * (7 and earlier: `ruleName`, `state`, `message`) and one bare Alertmanager alert. See README.md.
 */

type Obj = Record<string, unknown>;

/** `labels.severity`, lower-cased; anything else (or nothing) is warning. */
const SEVERITY: Readonly<Record<string, AlertSeverity>> = {
  critical: 'critical',
  page: 'critical',
  major: 'critical',
  high: 'critical',
  error: 'critical',
  warning: 'warning',
  warn: 'warning',
  minor: 'warning',
  medium: 'warning',
  info: 'info',
  informational: 'info',
  none: 'info',
  low: 'info',
};

/** An alert's or envelope's `status`; Grafana's top-level `state` (unified and legacy). */
const STATUS: Readonly<Record<string, AlertStatus>> = { firing: 'firing', resolved: 'resolved' };
const GRAFANA_STATE: Readonly<Record<string, AlertStatus>> = { alerting: 'firing', ok: 'resolved', no_data: 'firing', pending: 'firing', paused: 'firing' };

/** Labels that name the service, in order of preference. */
const SERVICE_LABELS = ['service', 'job', 'app', 'app_kubernetes_io_name', 'namespace'] as const;
/** Annotations that describe the alert, in order of preference. */
const SUMMARY_ANNOTATIONS = ['summary', 'description', 'message'] as const;
/** Envelope keys Alertmanager and Grafana always send beside `alerts`. */
const ENVELOPE_KEYS = ['groupKey', 'receiver', 'version', 'externalURL'] as const;
/** Legacy Grafana fields that identify the rule (its measured `evalMatches` never do). */
const LEGACY_IDENTITY = ['ruleId', 'dashboardId', 'panelId', 'orgId'] as const;

const UNNAMED = 'unnamed alert';

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function text(v: unknown): string | null {
  return typeof v === 'string' && v.trim() !== '' ? v : null;
}

function firstText(from: Obj | null, keys: readonly string[]): string | null {
  if (from === null) return null;
  for (const k of keys) {
    const v = text(from[k]);
    if (v !== null) return v;
  }
  return null;
}

function severityOf(labels: Obj | null): AlertSeverity {
  const s = labels === null ? null : text(labels.severity);
  return (s === null ? undefined : SEVERITY[s.trim().toLowerCase()]) ?? 'warning';
}

function statusOf(alert: Obj, envelope: Obj | null): AlertStatus {
  const own = typeof alert.status === 'string' ? STATUS[alert.status.toLowerCase()] : undefined;
  if (own !== undefined) return own;
  if (envelope !== null) {
    const top = typeof envelope.status === 'string' ? STATUS[envelope.status.toLowerCase()] : undefined;
    if (top !== undefined) return top;
    const state = typeof envelope.state === 'string' ? GRAFANA_STATE[envelope.state.toLowerCase()] : undefined;
    if (state !== undefined) return state;
  }
  return 'firing';
}

/** One element of `alerts[]` (or a bare alert): null when it has no `labels` object. */
function readAlert(alert: unknown, envelope: Obj | null): NormalisedAlert | null {
  if (!isObj(alert) || !isObj(alert.labels)) return null;
  const labels = alert.labels;
  // The generic shape ({name, labels, ...}) is not an Alertmanager alert.
  if (typeof alert.name === 'string' && typeof labels.alertname !== 'string') return null;
  const annotations = isObj(alert.annotations) ? alert.annotations : null;
  const fingerprint = text(alert.fingerprint);
  return {
    name: text(labels.alertname) ?? UNNAMED,
    severity: severityOf(labels),
    status: statusOf(alert, envelope),
    service: firstText(labels, SERVICE_LABELS),
    // Only the alert's labels: annotations, Grafana's values/valueString and the URLs stay out,
    // so every label identifies the alert (as it does in Alertmanager).
    labels: { ...labels },
    summary: firstText(annotations, SUMMARY_ANNOTATIONS) ?? '',
    id: fingerprint,
  };
}

/** Legacy Grafana (7 and earlier): one alert per rule, no fingerprint. */
function readLegacy(body: Obj): NormalisedAlert | null {
  const name = text(body.ruleName);
  if (name === null || typeof body.state !== 'string') return null;
  const tags = isObj(body.tags) ? body.tags : {};
  const meta: Obj = {};
  for (const k of LEGACY_IDENTITY) if (typeof body[k] === 'number' || typeof body[k] === 'string') meta[k] = body[k];
  if (text(body.ruleUrl) !== null) meta.ruleUrl = body.ruleUrl;
  const identity = [...new Set([...Object.keys(tags).filter((k) => k !== 'siem'), ...Object.keys(meta).filter((k) => k !== 'ruleUrl')])];
  return {
    name: name,
    severity: severityOf(tags),
    status: body.state.toLowerCase() === 'ok' ? 'resolved' : 'firing',
    service: firstText(tags, SERVICE_LABELS),
    labels: { ...tags, ...meta },
    summary: text(body.message) ?? text(body.title) ?? '',
    // ruleId is 0 in test sends and a bare small integer otherwise, so it enters the hash
    // (with the dashboard, panel and org) rather than becoming the id.
    id: null,
    identity,
  };
}

function isEnvelope(body: Obj): body is Obj & { alerts: unknown[] } {
  return Array.isArray(body.alerts);
}

function isLegacy(body: Obj): boolean {
  return typeof body.ruleName === 'string' && typeof body.state === 'string' && !('alerts' in body);
}

function isBareAlert(body: Obj): boolean {
  return !('alerts' in body) && isObj(body.labels) && typeof body.labels.alertname === 'string' && typeof body.name !== 'string';
}

function normalise(body: unknown): NormalisedAlert[] | null {
  if (!isObj(body)) return null;
  if (isEnvelope(body)) {
    if (body.alerts.length === 0) return null;
    const out: NormalisedAlert[] = [];
    for (const a of body.alerts) {
      const alert = readAlert(a, body);
      if (alert === null) return null;
      out.push(alert);
    }
    return out;
  }
  if (isLegacy(body)) {
    const alert = readLegacy(body);
    return alert === null ? null : [alert];
  }
  if (isBareAlert(body)) {
    const alert = readAlert(body, null);
    return alert === null ? null : [alert];
  }
  return null;
}

/**
 * Only these shapes: an `alerts` array of objects with a `labels` object, beside an envelope key
 * (or, without one, every alert with a `labels.alertname` and no `name`, so the generic shape
 * is never claimed); legacy Grafana's `ruleName` + `state`; a bare alert with
 * `labels.alertname` and `startsAt` or `generatorURL`.
 */
function detect(body: unknown): boolean {
  if (!isObj(body)) return false;
  if (isEnvelope(body)) {
    const alerts = body.alerts;
    if (alerts.length === 0 || !alerts.every((a) => isObj(a) && isObj(a.labels))) return false;
    if (ENVELOPE_KEYS.some((k) => typeof body[k] === 'string')) return true;
    return alerts.every((a) => isObj(a) && isObj(a.labels) && typeof a.labels.alertname === 'string' && typeof a.name !== 'string');
  }
  if (isLegacy(body)) return text(body.ruleName) !== null;
  return isBareAlert(body) && (typeof body.startsAt === 'string' || typeof body.generatorURL === 'string');
}

const plugin: NormaliserPlugin = { normalise, detect };

export default plugin;
