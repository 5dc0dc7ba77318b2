import type { NormalisedAlert, NormaliserPlugin } from '../../../host/plugins/contract.ts';
import { firstText, isObj, mapAlertmanagerAlert, SERVICE_LABELS, severityOf, text, type Obj } from './map.ts';

/**
 * Prometheus Alertmanager webhooks (`version: "4"`), Grafana unified alerting (the same envelope
 * with `orgId`, `title`, `state`, `message`, `version: "1"` and per-alert extras), legacy Grafana
 * (7 and earlier: `ruleName`, `state`, `message`) and one bare Alertmanager alert. See README.md.
 */

/** Envelope keys Alertmanager and Grafana always send beside `alerts`. */
const ENVELOPE_KEYS = ['groupKey', 'receiver', 'version', 'externalURL'] as const;
/** Legacy Grafana fields that identify the rule (its measured `evalMatches` never do). */
const LEGACY_IDENTITY = ['ruleId', 'dashboardId', 'panelId', 'orgId'] as const;

/** One element of `alerts[]` (or a bare alert): the shared mapping of map.ts. */
const readAlert = mapAlertmanagerAlert;

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
