import type {
  ConnectorContext,
  ConnectorFindings,
  ConnectorPluginWithCapabilities,
  ConnectorTestResult,
  NotifyMessage,
  NotifyResult,
} from '../../../host/plugins/contract.ts';

/**
 * PagerDuty Events API v2 as a notification target. An incident opened or escalated is a
 * `trigger`, a closed one a `resolve`, all with `dedup_key` = the episode id, so PagerDuty
 * keeps one alert per incident and a retried message changes nothing. `test` only checks that
 * the Events API answers: it never creates an alert. See README.md.
 */

interface Settings {
  routing_key: string;
  url?: string;
  timeout_s?: number;
}

export const DEFAULT_URL = 'https://events.pagerduty.com/v2/enqueue';
const DEFAULT_TIMEOUT_S = 10;
/** PagerDuty's summary is at most 1024 characters. */
const SUMMARY_MAX = 1024;

/** The common severity in PagerDuty's vocabulary (it also has `error`, which nothing maps to). */
const SEVERITY: Record<string, 'critical' | 'warning' | 'info'> = { critical: 'critical', warning: 'warning', info: 'info' };

/** The Events API v2 body for one message. */
export function eventBody(routingKey: string, m: NotifyMessage): Record<string, unknown> {
  const e = m.episode;
  if (m.event === 'incident.closed') return { routing_key: routingKey, event_action: 'resolve', dedup_key: e.id };
  const alerts = e.alerts.length === 0 ? 'an alert' : e.alerts.slice(0, 5).join(', ') + (e.alerts.length > 5 ? ` and ${e.alerts.length - 5} more` : '');
  const found = m.event === 'incident.diagnosed' && e.diagnosis !== undefined ? ` — ${e.diagnosis.summary}` : '';
  const summary = `[${e.severity}] ${e.service}: ${alerts}${m.event === 'incident.escalated' ? ' (escalated)' : ''}${found}`;
  return {
    routing_key: routingKey,
    event_action: 'trigger',
    dedup_key: e.id,
    client: 'On-call engineer',
    ...(e.url === null ? {} : { client_url: e.url, links: [{ href: e.url, text: 'Incident in the on-call console' }] }),
    payload: {
      summary: summary.slice(0, SUMMARY_MAX),
      source: e.service,
      severity: SEVERITY[e.severity] ?? 'warning',
      timestamp: e.t_open,
      component: e.service,
      class: m.event,
      custom_details: {
        episode: e.id,
        alerts: e.alerts,
        outcome: e.outcome,
        event: m.event,
        sent_at: m.sent_at,
        ...(e.diagnosis === undefined ? {} : { diagnosis: e.diagnosis }),
      },
    },
  };
}

const plugin: ConnectorPluginWithCapabilities = {
  async test(ctx: ConnectorContext): Promise<ConnectorTestResult & ConnectorFindings> {
    const s = ctx.settings as unknown as Settings;
    const url = s.url ?? DEFAULT_URL;
    // Whether the Events API answers at all (any status below 500): a HEAD, never an event.
    const r = await ctx.http.request({ method: 'HEAD', url, timeoutS: s.timeout_s ?? DEFAULT_TIMEOUT_S, shown: 'origin' });
    if (!r.ok) return { ok: false, problem: r.problem };
    if (r.status >= 500) return { ok: false, problem: `${r.where} answered HTTP ${r.status}` };
    return { ok: true, problem: null, found: { origin: new URL(url).origin, head_status: r.status } };
  },

  async notify(ctx: ConnectorContext, message: NotifyMessage): Promise<NotifyResult> {
    const s = ctx.settings as unknown as Settings;
    const url = s.url ?? DEFAULT_URL;
    const r = await ctx.http.request({
      method: 'POST',
      url,
      body: JSON.stringify(eventBody(s.routing_key, message)),
      headers: { 'content-type': 'application/json', 'user-agent': 'oncall-pagerduty/1.0' },
      timeoutS: s.timeout_s ?? DEFAULT_TIMEOUT_S,
      maxBodyBytes: 2000,
      shown: 'origin',
    });
    if (!r.ok) return { ok: false, problem: r.problem };
    if (r.status >= 200 && r.status < 300) return { ok: true, problem: null };
    if (r.status >= 300 && r.status < 400) return { ok: false, problem: `${r.where} redirects (HTTP ${r.status}); point url at the final address` };
    if (r.status === 401 || r.status === 403) return { ok: false, problem: `${r.where} refused the message (HTTP ${r.status}): check the secret or key` };
    // PagerDuty answers 400 with {"status":"invalid event","errors":[...]} for a bad key or body.
    if (r.status === 400) return { ok: false, problem: `${r.where} answered HTTP 400 (invalid event: check routing_key)` };
    return { ok: false, problem: `${r.where} answered HTTP ${r.status}` };
  },
};

export default plugin;
