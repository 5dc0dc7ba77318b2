import type { AlertSeverity, AlertStatus, NormalisedAlert, NormaliserPlugin } from '../../../host/plugins/contract.ts';

/**
 * PagerDuty V3 webhook subscriptions (`{event: {id, event_type, resource_type, occurred_at,
 * agent, client, data}}`) and Events API v2 bodies (`{routing_key, event_action, dedup_key,
 * payload}`) as monitoring tools POST them to `/v2/enqueue`. See README.md for the mapping.
 * `routing_key` is an integration secret: it is never read into labels.
 */

type Obj = Record<string, unknown>;

/** Incident priority names as PagerDuty's default scheme has them (the scheme is per account). */
const PRIORITY: Readonly<Record<string, AlertSeverity>> = { p1: 'critical', p2: 'critical', p3: 'warning', p4: 'info', p5: 'info' };

/** Incident urgency. */
const URGENCY: Readonly<Record<string, AlertSeverity>> = { high: 'critical', low: 'warning' };

/** Events API v2 `payload.severity`: error pages like critical (both get high urgency). */
const EVENT_SEVERITY: Readonly<Record<string, AlertSeverity>> = { critical: 'critical', error: 'critical', warning: 'warning', info: 'info' };

/** Events API v2 `event_action`: acknowledging does not clear the alert. */
const EVENT_ACTION: Readonly<Record<string, AlertStatus>> = { trigger: 'firing', acknowledge: 'firing', resolve: 'resolved' };

/** Events v2 labels that say what a trigger without a dedup_key is about. */
const V2_IDENTITY = ['source', 'component', 'group', 'class'];

/** A table's own entry for `key` (never an inherited property such as `constructor`). */
const lookup = <T>(table: Readonly<Record<string, T>>, key: string | null | undefined): T | undefined =>
  key != null && Object.hasOwn(table, key) ? table[key] : undefined;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v.trim() : null);
/** The `summary` of a PagerDuty reference object (service, priority, escalation policy, team, user). */
const summaryOf = (v: unknown): string | null => (isObj(v) ? str(v.summary) : null);

const isV3 = (b: Obj): boolean =>
  isObj(b.event) && typeof b.event.event_type === 'string' && /^(?:incident|service)\./.test(b.event.event_type) && typeof b.event.resource_type === 'string';
const isV2 = (b: Obj): boolean =>
  typeof b.event_action === 'string' &&
  lookup(EVENT_ACTION, b.event_action) !== undefined &&
  (typeof b.routing_key === 'string' || typeof b.dedup_key === 'string');

function v3(event: Obj): NormalisedAlert | null {
  const data = event.data;
  // Only events that carry the incident itself make an alert (not notes, responders, services).
  if (!isObj(data) || data.type !== 'incident') return null;
  const id = str(data.id);
  if (id === null) return null;
  const eventType = event.event_type as string;
  const priority = summaryOf(data.priority);
  const urgency = str(data.urgency);
  const severity = lookup(PRIORITY, priority?.toLowerCase()) ?? lookup(URGENCY, urgency?.toLowerCase()) ?? 'warning';
  const status: AlertStatus = eventType === 'incident.resolved' || data.status === 'resolved' ? 'resolved' : 'firing';
  const labels: Obj = {
    event_type: eventType,
    status: str(data.status),
    urgency,
    priority,
    escalation_policy: summaryOf(data.escalation_policy),
    number: data.number,
    html_url: str(data.html_url),
    incident_key: str(data.incident_key),
    teams: Array.isArray(data.teams) ? data.teams.map(summaryOf) : null,
    assignees: Array.isArray(data.assignees) ? data.assignees.map(summaryOf) : null,
  };
  return {
    name: str(data.title) ?? `PagerDuty incident ${id}`,
    severity,
    status,
    service: summaryOf(data.service),
    labels,
    summary: str(data.description) ?? '',
    id,
  };
}

function v2(body: Obj): NormalisedAlert | null {
  const action = body.event_action as string;
  const dedupKey = str(body.dedup_key);
  const payload = isObj(body.payload) ? body.payload : {};
  // A trigger needs a summary; acknowledge and resolve name their alert by dedup_key alone.
  const name = action === 'trigger' ? str(payload.summary) : dedupKey;
  if (name === null) return null;
  const details = payload.custom_details;
  const labels: Obj = {
    event_action: action,
    source: str(payload.source),
    component: str(payload.component),
    group: str(payload.group),
    class: str(payload.class),
    custom_details: details,
    client: str(body.client),
    client_url: str(body.client_url),
  };
  const service = (isObj(details) ? str(details.service) : null) ?? str(payload.component) ?? str(payload.group);
  const severity = lookup(EVENT_SEVERITY, str(payload.severity)?.toLowerCase()) ?? 'warning';
  return {
    name,
    severity,
    status: lookup(EVENT_ACTION, action)!,
    service,
    labels,
    summary: str(payload.summary) ?? '',
    id: dedupKey,
    ...(dedupKey === null ? { identity: V2_IDENTITY } : {}),
  };
}

function detect(body: unknown): boolean {
  return isObj(body) && (isV3(body) || isV2(body));
}

function normalise(body: unknown): NormalisedAlert[] | null {
  if (!isObj(body)) return null;
  const alert = isV3(body) ? v3(body.event as Obj) : isV2(body) ? v2(body) : null;
  return alert === null ? null : [alert];
}

const plugin: NormaliserPlugin = { normalise, detect };
export default plugin;
