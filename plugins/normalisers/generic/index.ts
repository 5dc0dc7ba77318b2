import type { AlertSeverity, AlertStatus, NormalisedAlert, NormaliserPlugin } from '../../../host/plugins/contract.ts';

/**
 * The service's own Alert shape, `{name, severity, status, service, labels, summary, id}`, or
 * `{alerts: [...]}` of those: the catch-all for any source word no other normaliser claims.
 * See README.md.
 */

type Obj = Record<string, unknown>;

/** `severity`, lower-cased: the common vocabulary itself; anything else is warning. */
const SEVERITY: Readonly<Record<string, AlertSeverity>> = { critical: 'critical', warning: 'warning', info: 'info' };

/** `status` values, lower-cased, that say the condition cleared; anything else is firing. */
const RESOLVED = new Set(['resolved', 'resolve', 'ok', 'closed', 'cleared', 'recovered']);

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function hasName(v: unknown): v is Obj & { name: string } {
  return isObj(v) && typeof v.name === 'string' && v.name.trim() !== '';
}

/** A field that may be missing or null, else must be a string; `undefined` when it is neither. */
function optionalText(v: unknown): string | null | undefined {
  if (v === undefined || v === null) return null;
  return typeof v === 'string' ? v : undefined;
}

function readAlert(a: unknown): NormalisedAlert | null {
  if (!hasName(a)) return null;
  const service = optionalText(a.service);
  const summary = optionalText(a.summary);
  if (service === undefined || summary === undefined) return null;
  if (a.labels !== undefined && a.labels !== null && !isObj(a.labels)) return null;
  let id: string | null;
  if (a.id === undefined || a.id === null || a.id === '') id = null;
  else if (typeof a.id === 'string') id = a.id;
  else if (typeof a.id === 'number' && Number.isFinite(a.id)) id = String(a.id);
  else return null;
  const severity = typeof a.severity === 'string' ? SEVERITY[a.severity.trim().toLowerCase()] : undefined;
  const status: AlertStatus = typeof a.status === 'string' && RESOLVED.has(a.status.trim().toLowerCase()) ? 'resolved' : 'firing';
  return {
    name: a.name,
    severity: severity ?? 'warning',
    status,
    service: service === null || service.trim() === '' ? null : service,
    labels: isObj(a.labels) ? { ...a.labels } : {},
    summary: summary ?? '',
    id,
  };
}

function normalise(body: unknown): NormalisedAlert[] | null {
  if (!isObj(body)) return null;
  if (hasName(body)) {
    const alert = readAlert(body);
    return alert === null ? null : [alert];
  }
  if (!Array.isArray(body.alerts) || body.alerts.length === 0) return null;
  const out: NormalisedAlert[] = [];
  for (const a of body.alerts) {
    const alert = readAlert(a);
    if (alert === null) return null; // one unreadable alert refuses the whole batch
    out.push(alert);
  }
  return out;
}

/** The Alert shape as `auto` recognises it: a string `name` beside a string `severity` or `status`. */
function looksLikeAlert(v: unknown): boolean {
  return hasName(v) && (typeof v.severity === 'string' || typeof v.status === 'string');
}

/**
 * An alert (see {@link looksLikeAlert}), or an `alerts` array whose every item is one. Stricter
 * than `normalise`, so that another tool's body that merely has a `name` (an ARM resource, say)
 * is not read as this shape by `auto`.
 */
function detect(body: unknown): boolean {
  if (!isObj(body)) return false;
  if (hasName(body)) return looksLikeAlert(body);
  return Array.isArray(body.alerts) && body.alerts.length > 0 && body.alerts.every(looksLikeAlert);
}

const plugin: NormaliserPlugin = { normalise, detect };

export default plugin;
