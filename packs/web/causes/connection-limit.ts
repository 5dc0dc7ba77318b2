import type { CauseDefinition, CheckAnswer, CheckContext, EvidenceInput } from '../../../host/plugins/contract.ts';
import { NGINX_OR_HAPROXY, proxyName } from '../tier.ts';

const ID = 'web/connection-limit';

/**
 * `web/connection-limit`: the proxy ran out of connections in the window. nginx: it accepted
 * connections it could not handle (`nginx_connections_accepted` grew more than
 * `nginx_connections_handled`: stub_status's own sign of a resource limit such as
 * worker_connections; it does not say the limit itself). HAProxy: a frontend's sessions, or the
 * process's connections, reached `limit_ratio` of their maxconn. Each query that has series
 * decides; the evidence is those queries. See README.md.
 */
export const connectionLimit: CauseDefinition = {
  id: ID,
  title: 'Proxy connection limit reached',
  specificity: 65,
  applies: NGINX_OR_HAPROXY,
  reads: ['metrics'],
  settings: { window: '5m', limit_ratio: 0.95 },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { describedAll, evidenceOf, labelsOf, listed, num, overAll, percent, place, rounded, seriesName, count, MAX_SERIES } = ctx.lib.prometheus;
    const set = ctx.lib.prometheus.settings(ctx);
    const window = set.duration('window');
    const ratio = set.number('limit_ratio', 0, 1);
    const bad = set.problem();
    if (bad !== null) return { verdict: 'unknown', obstacle: 'the read was refused or failed', reason: bad };
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;
    const where = describedAll(p);
    const w = window.text;

    // One read after the other: the study paces a connector's reads one at a time.
    const ngx = await ctx.metrics.query(
      overAll(p, (s) => `increase(nginx_connections_accepted{${s}}[${w}]) - increase(nginx_connections_handled{${s}}[${w}])`),
    );
    const hap = await ctx.metrics.query(
      overAll(
        p,
        (s) =>
          `(max_over_time(haproxy_frontend_current_sessions{${s}}[${w}]) / haproxy_frontend_limit_sessions{${s}}) or (max_over_time(haproxy_process_current_connections{${s}}[${w}]) / haproxy_process_max_connections{${s}})`,
      ),
    );
    const evidence: EvidenceInput[] = [];
    const found: string[] = [];
    const subjects: string[] = [];

    if (ngx.samples.length > 0) {
      const rows = ngx.samples.map((s) => ({ metric: s.metric, dropped: Math.max(0, Math.round(num(s.value))) })).sort((a, b) => b.dropped - a.dropped);
      const hit = rows.filter((r) => r.dropped >= 1);
      evidence.push(
        evidenceOf(
          ngx,
          'metric',
          { window: w, nginx: rows.slice(0, MAX_SERIES).map((r) => ({ labels: labelsOf(r.metric), dropped: r.dropped })), total: rows.length },
          hit.length > 0
            ? `Over ${w}, nginx accepted connections it could not handle: ${listed(hit.map((r) => `${seriesName(r.metric)} dropped ${r.dropped}`))}.`
            : `Over ${w}, nginx handled every connection it accepted (${count(rows.length, 'instance')}, none dropped).`,
        ),
      );
      for (const r of hit) {
        found.push(
          `nginx ${seriesName(r.metric)} dropped ${count(r.dropped, 'connection')} it accepted (worker_connections or another resource limit reached)`,
        );
        subjects.push(r.metric.instance ?? seriesName(r.metric));
      }
    }
    if (hap.samples.length > 0) {
      const instances = new Set(hap.samples.map((s) => s.metric.instance)).size;
      const rows = hap.samples
        .map((s) => ({
          metric: s.metric,
          used: num(s.value),
          name: s.metric.proxy === undefined ? `the HAProxy process ${seriesName(s.metric)}` : `frontend ${proxyName(s.metric, instances)}`,
        }))
        .filter((r) => Number.isFinite(r.used))
        .sort((a, b) => b.used - a.used);
      const hit = rows.filter((r) => r.used >= ratio);
      evidence.push(
        evidenceOf(
          hap,
          'metric',
          {
            window: w,
            limit_ratio: ratio,
            haproxy: rows.slice(0, MAX_SERIES).map((r) => ({ labels: labelsOf(r.metric), of_limit: rounded(r.used) })),
            total: rows.length,
          },
          rows.length === 0
            ? `HAProxy reports no connection limit it could be compared with.`
            : `Over ${w}, the most HAProxy connections against their maxconn: ${listed(rows.map((r) => `${r.name} ${percent(r.used)}`))} (threshold ${percent(ratio)}).`,
        ),
      );
      for (const r of hit) {
        found.push(`${r.name} reached ${percent(r.used)} of its maxconn`);
        subjects.push(r.metric.proxy ?? r.metric.instance ?? r.name);
      }
    }

    if (evidence.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason: `no nginx_connections_accepted (prometheus-nginx-exporter) or haproxy_frontend_current_sessions (HAProxy's exporter) series for ${where}`,
      };
    if (found.length > 0)
      return {
        verdict: 'holds',
        reason: `in the last ${w}, ${listed(found)} (${where})`,
        evidence,
        subjects: [...new Set(subjects)].slice(0, 50),
        verification: { cause: ID, expect: 'ruled_out', after_s: Math.min(3600, window.s + 60) },
      };
    return {
      verdict: 'ruled_out',
      reason: `in the last ${w}, the proxy of ${where} dropped no connection and stayed under ${percent(ratio)} of its connection limits`,
      evidence,
    };
  },
};
