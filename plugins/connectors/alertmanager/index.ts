import type {
  ConnectorContext,
  ConnectorFindings,
  ConnectorPluginWithCapabilities,
  ConnectorTestResult,
  NormalisedAlert,
} from '../../../host/plugins/contract.ts';
import { mapAlertmanagerAlert } from './map.ts';
import { DEFAULT_TIMEOUT_S, type Settings } from './settings.ts';
import { actSilence, rehearseSilence, undoSilence } from './silence.ts';

/**
 * Prometheus Alertmanager over its API v2. `test` reads /api/v2/status and reports the version
 * and cluster; `pollAlerts` reads the active, unsilenced, uninhibited alerts (/api/v2/alerts) and
 * maps each exactly as the `alertmanager` normaliser maps a webhook alert (an identical copy of
 * its map.ts), so a polled alert has the fingerprint a pushed one has. Those only read (GET). The
 * one action, `silence` (silence.ts), is the only thing that writes: rehearse, act and undo,
 * which only the host's action path calls. See README.md.
 */

type Answer = { ok: true; body: unknown } | { ok: false; problem: string };

/** GETs an API path (ctx.http: timeout, basic auth, no redirects); answers its JSON or what went wrong, in words a person can act on. */
async function get(ctx: ConnectorContext, path: string, params: Array<[string, string]> = []): Promise<Answer> {
  const s = ctx.settings as unknown as Settings;
  const reached = await ctx.http.request({
    url: s.url.replace(/\/+$/, '') + path,
    query: params,
    headers: { accept: 'application/json', 'user-agent': 'oncall-connector-alertmanager/1.0' },
    ...(s.username === undefined ? {} : { auth: { basic: { username: s.username, password: s.password ?? '' } } }),
    timeoutS: s.timeout_s ?? DEFAULT_TIMEOUT_S,
  });
  if (!reached.ok) return reached;
  const { status, text, where } = reached;
  if (status === 401) return { ok: false, problem: `authentication failed (HTTP 401 from ${where}); check username and password` };
  if (status === 403) return { ok: false, problem: `access refused (HTTP 403 from ${where})` };
  if (status >= 300 && status < 400)
    return { ok: false, problem: `${where} redirects (HTTP ${status}) to ${reached.headers.location ?? 'nowhere'}; point url at the final address` };
  const res = { status };
  if (res.status === 400)
    return { ok: false, problem: `Alertmanager refused the request (HTTP 400 from ${where}): ${text.trim().slice(0, 300) || 'no reason given'}; check filter` };
  if (res.status !== 200) return { ok: false, problem: `HTTP ${res.status} from ${where}; is url the Alertmanager (API v2)?` };
  try {
    return { ok: true, body: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, problem: `HTTP ${res.status} from ${where} is not an Alertmanager API answer (not JSON); is url the Alertmanager?` };
  }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

const plugin: ConnectorPluginWithCapabilities = {
  async test(ctx: ConnectorContext): Promise<ConnectorTestResult & ConnectorFindings> {
    const r = await get(ctx, '/api/v2/status');
    if (!r.ok) return { ok: false, problem: r.problem };
    const body = isObj(r.body) ? r.body : {};
    const info = isObj(body.versionInfo) ? body.versionInfo : null;
    const version = info === null ? null : str(info.version);
    if (version === null) return { ok: false, problem: 'the status names no version; is url an Alertmanager (API v2)?' };
    const cluster = isObj(body.cluster) ? body.cluster : {};
    return {
      ok: true,
      problem: null,
      found: {
        version,
        revision: str(info!.revision),
        go_version: str(info!.goVersion),
        cluster_status: str(cluster.status),
        cluster_name: str(cluster.name),
        cluster_peers: Array.isArray(cluster.peers) ? cluster.peers.length : 0,
        uptime: str(body.uptime),
      },
    };
  },

  async pollAlerts(ctx: ConnectorContext): Promise<NormalisedAlert[]> {
    const s = ctx.settings as unknown as Settings;
    const params: Array<[string, string]> = [
      ['active', 'true'],
      ['silenced', 'false'],
      ['inhibited', 'false'],
      ...(s.filter ?? []).map((m): [string, string] => ['filter', m]),
    ];
    const r = await get(ctx, '/api/v2/alerts', params);
    // A failed poll throws: the host then changes nothing and shows the reason as the last problem.
    if (!r.ok) throw new Error(r.problem);
    if (!Array.isArray(r.body)) throw new Error('the alert list is not a JSON array; is url an Alertmanager (API v2)?');
    const now = Date.now();
    const out: NormalisedAlert[] = [];
    for (const a of r.body) {
      // The API leaves resolved alerts out; one that ended while being sent is not firing.
      if (isObj(a) && typeof a.endsAt === 'string' && Date.parse(a.endsAt) <= now) continue;
      const alert = mapAlertmanagerAlert(a, null);
      if (alert === null) throw new Error('Alertmanager answered an alert without labels');
      out.push({ ...alert, status: 'firing' });
    }
    return out;
  },

  /** `silence` is the only action kind: see silence.ts. */
  rehearse: (ctx, action) => rehearseSilence(ctx, action),
  act: (ctx, action) => actSilence(ctx, action),
  undo: (ctx, action) => undoSilence(ctx, action),
};

export default plugin;
