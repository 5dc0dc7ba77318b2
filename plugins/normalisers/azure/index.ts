import type { AlertSeverity, NormalisedAlert, NormaliserPlugin } from '../../../host/plugins/contract.ts';

/**
 * Azure Monitor (common alert schema) and Microsoft Sentinel incidents. See README.md for the
 * field mapping and the decisions taken.
 */

type Obj = Record<string, unknown>;

const COMMON_SCHEMA = 'azuremonitorcommonalertschema';
const INCIDENT_TYPE = 'microsoft.securityinsights/incidents';

/** `essentials.severity`; null or anything else is `warning`. */
const MONITOR_SEVERITY: Record<string, AlertSeverity> = {
  sev0: 'critical',
  sev1: 'critical',
  sev2: 'warning',
  sev3: 'info',
  sev4: 'info',
};

/** Sentinel `properties.severity`. */
const INCIDENT_SEVERITY: Record<string, AlertSeverity> = {
  high: 'critical',
  medium: 'warning',
  low: 'info',
  informational: 'info',
};

/** Labels that identify a Monitor alert when it comes without an `alertId`. */
const MONITOR_IDENTITY = ['signalType', 'monitoringService', 'subscriptionId', 'resourceGroup', 'targetResourceType', 'targetResourceId'];

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | null {
  if (typeof v === 'string') return v.trim() === '' ? null : v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return null;
}

function lower(v: unknown): string {
  return typeof v === 'string' ? v.trim().toLowerCase() : '';
}

function lastSegment(id: string): string | null {
  const parts = id.split('/').filter((p) => p !== '');
  return parts.length === 0 ? null : parts[parts.length - 1]!;
}

/** Takes `key` out of an ARM resource id such as `/subscriptions/<s>/resourceGroups/<rg>/…`. */
function armPart(id: string | null, key: string): string | null {
  if (id === null) return null;
  const parts = id.split('/');
  const i = parts.findIndex((p) => p.toLowerCase() === key);
  return i >= 0 ? str(parts[i + 1]) : null;
}

// ---------------------------------------------------------------- Azure Monitor

function isMonitor(body: unknown): body is Obj & { data: Obj & { essentials: Obj } } {
  return isObj(body) && lower(body.schemaId) === COMMON_SCHEMA && isObj(body.data) && isObj(body.data.essentials);
}

/** The alert condition as a sentence, e.g. "Percentage CPU GreaterThan 25 (7.727)". */
function conditionText(alertContext: Obj): string {
  const condition = alertContext.condition;
  if (!isObj(condition) || !Array.isArray(condition.allOf)) return '';
  const parts: string[] = [];
  for (const c of condition.allOf) {
    if (!isObj(c)) continue;
    const what = str(c.metricName) ?? str(c.searchQuery) ?? str(c.webTestName);
    if (what === null) continue;
    let text = [what, str(c.operator), str(c.threshold)].filter((x) => x !== null).join(' ');
    const value = str(c.metricValue);
    if (value !== null) text += ` (${value})`;
    parts.push(text);
  }
  return parts.join('; ');
}

/** `dimensions: [{name, value}]` of every condition, as name → value. */
function dimensions(alertContext: Obj): Obj {
  const out: Obj = {};
  const condition = alertContext.condition;
  if (!isObj(condition) || !Array.isArray(condition.allOf)) return out;
  for (const c of condition.allOf) {
    if (!isObj(c) || !Array.isArray(c.dimensions)) continue;
    for (const d of c.dimensions) {
      if (!isObj(d)) continue;
      const name = str(d.name);
      const value = str(d.value);
      if (name !== null && value !== null) out[name] = value;
    }
  }
  return out;
}

function normaliseMonitor(body: Obj & { data: Obj & { essentials: Obj } }): NormalisedAlert[] {
  const data = body.data;
  const e = data.essentials;
  const ctx = isObj(data.alertContext) ? data.alertContext : {};
  const alertData = isObj(ctx.AlertData) ? ctx.AlertData : {};
  const targets = Array.isArray(e.alertTargetIDs) ? e.alertTargetIDs.filter((t): t is string => typeof t === 'string') : [];
  const items = Array.isArray(e.configurationItems) ? e.configurationItems : [];
  const targetId = targets[0] ?? null;

  const name = str(e.alertRule) ?? str(alertData.BudgetName) ?? str(e.description) ?? str(e.monitoringService) ?? 'Azure Monitor alert';
  const service = str(e.targetResourceName) ?? str(items[0]) ?? (targetId === null ? null : lastSegment(targetId));
  const summary = str(e.description) ?? conditionText(ctx);

  const custom = { ...(isObj(ctx.properties) ? ctx.properties : {}), ...(isObj(data.customProperties) ? data.customProperties : {}) };
  const dims = dimensions(ctx);
  const labels: Obj = {
    ...custom,
    signalType: str(e.signalType),
    monitoringService: str(e.monitoringService),
    subscriptionId: str(e.targetResourceSubscriptionId) ?? armPart(targetId, 'subscriptions') ?? armPart(str(e.alertId), 'subscriptions'),
    resourceGroup: str(e.targetResourceGroup) ?? armPart(targetId, 'resourcegroups'),
    targetResourceType: str(e.targetResourceType),
    targetResourceId: targetId,
    conditionType: str(ctx.conditionType),
    budgetName: str(alertData.BudgetName),
    dimensions: Object.keys(dims).length === 0 ? null : dims,
  };
  const id = str(e.alertId);
  const alert: NormalisedAlert = {
    name,
    severity: MONITOR_SEVERITY[lower(e.severity)] ?? 'warning',
    status: lower(e.monitorCondition) === 'resolved' ? 'resolved' : 'firing',
    service,
    labels,
    summary,
    id,
  };
  if (id === null) alert.identity = [...MONITOR_IDENTITY, 'budgetName', ...Object.keys(dims).map((k) => `dimensions.${k}`)];
  return [alert];
}

// ---------------------------------------------------------------- Sentinel incidents

function isIncident(v: unknown): v is Obj & { properties: Obj } {
  if (!isObj(v) || !isObj(v.properties)) return false;
  if (lower(v.type) === INCIDENT_TYPE) return true;
  // A bare incident whose `type` was dropped by the Logic App still has these two.
  return (
    v.type === undefined &&
    (typeof v.properties.incidentNumber === 'number' || typeof v.properties.incidentNumber === 'string') &&
    typeof v.properties.title === 'string'
  );
}

function isIncidentTrigger(body: unknown): body is Obj & { object: Obj & { properties: Obj } } {
  return isObj(body) && lower(body.objectSchemaType) === 'incident' && isObj(body.object) && isObj(body.object.properties);
}

/** A Sentinel incidents list (`GET …/incidents`): `{value: [incident, …]}`. */
function isIncidentList(body: unknown): body is Obj & { value: Array<Obj & { properties: Obj }> } {
  return (
    isObj(body) &&
    Array.isArray(body.value) &&
    body.value.length > 0 &&
    body.value.every((v) => isObj(v) && lower(v.type) === INCIDENT_TYPE && isObj(v.properties))
  );
}

function normaliseIncident(incident: Obj & { properties: Obj }, trigger: Obj | null): NormalisedAlert | null {
  const p = incident.properties;
  const extra = isObj(p.additionalData) ? p.additionalData : {};
  const owner = isObj(p.owner) ? p.owner : {};
  const number = str(p.incidentNumber);
  const name = str(p.title) ?? (number === null ? null : `Sentinel incident ${number}`);
  if (name === null) return null;
  const id = str(incident.name) ?? (typeof incident.id === 'string' ? lastSegment(incident.id) : null);
  const products = Array.isArray(extra.alertProductNames) ? extra.alertProductNames : [];
  const labelNames = Array.isArray(p.labels) ? p.labels.map((l) => (isObj(l) ? str(l.labelName) : null)).filter((l) => l !== null) : [];
  const labels: Obj = {
    incidentNumber: number,
    providerName: str(p.providerName),
    providerIncidentId: str(p.providerIncidentId),
    classification: str(p.classification),
    classificationReason: str(p.classificationReason),
    owner: str(owner.assignedTo),
    incidentLabels: labelNames,
    tactics: extra.tactics,
    techniques: extra.techniques,
    incidentUrl: str(p.incidentUrl),
    workspaceId: trigger === null ? null : str(trigger.workspaceId),
  };
  const alert: NormalisedAlert = {
    name,
    severity: INCIDENT_SEVERITY[lower(p.severity)] ?? 'warning',
    status: lower(p.status) === 'closed' ? 'resolved' : 'firing',
    service: str(products[0]),
    labels,
    summary: str(p.description) ?? name,
    id,
  };
  if (id === null) alert.identity = ['incidentNumber', 'providerName', 'providerIncidentId', 'workspaceId'];
  return alert;
}

function all(alerts: Array<NormalisedAlert | null>): NormalisedAlert[] | null {
  return alerts.every((a) => a !== null) ? (alerts as NormalisedAlert[]) : null;
}

const plugin: NormaliserPlugin = {
  detect: (body) => isMonitor(body) || isIncidentTrigger(body) || isIncident(body) || isIncidentList(body),
  normalise: (body) => {
    let alerts: NormalisedAlert[] | null = null;
    if (isMonitor(body)) alerts = normaliseMonitor(body);
    else if (isIncidentTrigger(body)) alerts = all([normaliseIncident(body.object, body)]);
    else if (isIncident(body)) alerts = all([normaliseIncident(body, null)]);
    else if (isIncidentList(body)) alerts = all(body.value.map((v) => normaliseIncident(v, null)));
    return alerts;
  },
};

export default plugin;
