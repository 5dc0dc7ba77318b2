import type { AlertContext, AlertSeverity, AlertStatus, NormalisedAlert } from '../../../host/plugins/contract.ts';

/**
 * How one Alertmanager alert becomes a common alert. The `alertmanager` normaliser (webhooks,
 * plugins/normalisers/alertmanager/map.ts) and the `alertmanager` connector (polling
 * `/api/v2/alerts`, plugins/connectors/alertmanager/map.ts) each hold an identical copy, so each
 * plugin folder stands alone and a polled alert gets exactly the name, severity, service,
 * labels, summary and id (Alertmanager's own fingerprint) a pushed one gets. The plugin contract
 * test (test/plugins/plugin-contract.test.ts) fails when the two copies differ: change both.
 * Self-contained: it imports nothing but the contract's types.
 */

export type Obj = Record<string, unknown>;

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
export const SERVICE_LABELS = ['service', 'job', 'app', 'app_kubernetes_io_name', 'namespace'] as const;
/** Annotations that describe the alert, in order of preference. */
const SUMMARY_ANNOTATIONS = ['summary', 'description', 'message'] as const;

const UNNAMED = 'unnamed alert';

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function text(v: unknown): string | null {
  return typeof v === 'string' && v.trim() !== '' ? v : null;
}

export function firstText(from: Obj | null, keys: readonly string[]): string | null {
  if (from === null) return null;
  for (const k of keys) {
    const v = text(from[k]);
    if (v !== null) return v;
  }
  return null;
}

export function severityOf(labels: Obj | null): AlertSeverity {
  const s = labels === null ? null : text(labels.severity);
  return (s === null ? undefined : SEVERITY[s.trim().toLowerCase()]) ?? 'warning';
}

/**
 * The alert's own `status` when it is a word (webhooks); else the envelope's `status` or
 * Grafana's `state`; else firing. The API's `status` object (`{state: "active", ...}`) is not a
 * word, so an alert read from `/api/v2/alerts` without an envelope is firing.
 */
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

/** The longest rule expression kept (a longer one is left out rather than cut into other PromQL). */
const MAX_EXPRESSION = 2000;

/**
 * What the alert says beyond its labels: `startsAt` (Alertmanager's zero time `0001-…` is no
 * time), and the rule's PromQL from a Prometheus `generatorURL` (`…/graph?g0.expr=<PromQL>`).
 * Grafana's generatorURL points at its own rule page and carries no expression.
 */
export function contextOf(alert: Obj): AlertContext | undefined {
  const out: AlertContext = {};
  const starts = text(alert.startsAt);
  if (starts !== null && !starts.startsWith('0001-') && !Number.isNaN(Date.parse(starts))) out.starts_at = new Date(Date.parse(starts)).toISOString();
  const url = text(alert.generatorURL);
  if (url !== null && URL.canParse(url)) {
    const expr = new URL(url).searchParams.get('g0.expr');
    if (expr !== null && expr.trim() !== '' && expr.length <= MAX_EXPRESSION) out.expression = expr;
  }
  return out.starts_at === undefined && out.expression === undefined ? undefined : out;
}

/**
 * One Alertmanager alert (an element of a webhook's `alerts[]`, a bare alert, or an element of
 * `GET /api/v2/alerts`): null when it has no `labels` object, or when it has a `name` but no
 * `labels.alertname` (the generic shape, not an Alertmanager alert).
 */
export function mapAlertmanagerAlert(alert: unknown, envelope: Obj | null): NormalisedAlert | null {
  if (!isObj(alert) || !isObj(alert.labels)) return null;
  const labels = alert.labels;
  if (typeof alert.name === 'string' && typeof labels.alertname !== 'string') return null;
  const annotations = isObj(alert.annotations) ? alert.annotations : null;
  const fingerprint = text(alert.fingerprint);
  const context = contextOf(alert);
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
    ...(context === undefined ? {} : { context }),
  };
}
