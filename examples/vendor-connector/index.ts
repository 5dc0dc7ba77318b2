// A vendor's connector plugin, built only on the host's public plugin contract. The import is a
// type import: it is erased when the plugin runs, so the path only has to resolve for your
// editor and type checker (point it at a checkout of the service, or at a copy of contract.ts).
// It does HTTP through the host's client, ctx.http, never with its own fetch.
import type {
  AlertSeverity,
  ConnectorContext,
  ConnectorFindings,
  ConnectorPluginWithCapabilities,
  ConnectorTestResult,
  NormalisedAlert,
} from '../../host/plugins/contract.ts';

/** The settings plugin.json declares; the host hands them over validated, secrets decrypted. */
interface Settings {
  url: string;
  api_key?: string;
  timeout_s?: number;
}

/** The parts of a Statuspage summary (`/api/v2/summary.json`) this plugin reads. */
interface Summary {
  page: { id?: string; name: string };
  status: { indicator: string; description: string };
  components?: Array<{ id: string; name: string; status: string; description?: string | null }>;
}

const DEFAULT_TIMEOUT_S = 5;

/** Component states that are not "operational", mapped to the host's severities. */
const SEVERITY: Readonly<Record<string, AlertSeverity>> = {
  major_outage: 'critical',
  partial_outage: 'warning',
  degraded_performance: 'warning',
  under_maintenance: 'info',
};

type Fetched = { ok: true; summary: Summary } | { ok: false; problem: string };

async function fetchSummary(ctx: ConnectorContext): Promise<Fetched> {
  const s = ctx.settings as unknown as Settings;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (s.api_key !== undefined) headers.authorization = `OAuth ${s.api_key}`;
  // The host's HTTP client: it gives up at our timeout or when the host does (ctx.signal),
  // follows no redirect, caps the body, and words a failure to get an answer for a person.
  const r = await ctx.http.request({ url: s.url, headers, timeoutS: s.timeout_s ?? DEFAULT_TIMEOUT_S });
  if (!r.ok) return { ok: false, problem: r.problem };
  if (r.status === 401 || r.status === 403) return { ok: false, problem: `the status page refused the api_key (HTTP ${r.status})` };
  if (r.status < 200 || r.status >= 300) return { ok: false, problem: `the status page answered HTTP ${r.status}` };
  let body: unknown;
  try {
    body = JSON.parse(r.text);
  } catch {
    return { ok: false, problem: 'the status page did not answer JSON; is url the summary.json address?' };
  }
  const b = body as Partial<Summary>;
  if (typeof b?.page?.name !== 'string' || typeof b.status?.indicator !== 'string') {
    return { ok: false, problem: 'the answer is not a status summary (no page.name or status.indicator)' };
  }
  return { ok: true, summary: b as Summary };
}

const plugin: ConnectorPluginWithCapabilities = {
  /** Reachable and readable is healthy; the page's own state is reported as what was found. */
  async test(ctx: ConnectorContext): Promise<ConnectorTestResult & ConnectorFindings> {
    const r = await fetchSummary(ctx);
    if (!r.ok) return { ok: false, problem: r.problem };
    const { page, status, components = [] } = r.summary;
    ctx.log.info('status page read', { page: page.name, indicator: status.indicator });
    return {
      ok: true,
      problem: null,
      found: { page: page.name, indicator: status.indicator, description: status.description, components: components.length },
    };
  },

  /** Every component that is not operational, as a firing alert (read-only: one GET). */
  async pollAlerts(ctx: ConnectorContext): Promise<NormalisedAlert[]> {
    const r = await fetchSummary(ctx);
    if (!r.ok) throw new Error(r.problem); // the host reports it as the connector's problem
    const { page, components = [] } = r.summary;
    return components
      .filter((c) => c.status !== 'operational')
      .map((c) => ({
        name: `${c.name} ${c.status.replaceAll('_', ' ')}`,
        severity: SEVERITY[c.status] ?? 'warning',
        status: 'firing',
        service: c.name,
        labels: { page: page.name, component: c.name, component_status: c.status },
        summary: c.description ?? '',
        // Stable from firing to resolved: the page and the component, never the state.
        id: `statuspage:${page.id ?? page.name}:${c.id}`,
      }));
  },
};

export default plugin;
