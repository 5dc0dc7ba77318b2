import type { CauseDefinition, CheckAnswer, CheckContext, EvidenceInput } from '../../../host/plugins/contract.ts';
import { BACKEND_LINK, backends, NGINX_OR_HAPROXY } from '../tier.ts';

const ID = 'web/backend-down';

/**
 * `web/backend-down`: servers behind the service's proxy are down. HAProxy says so itself: its
 * health checks put a server in state DOWN (`haproxy_server_status{state="DOWN"} == 1`). nginx's
 * stub_status knows no upstreams, so for nginx the backends are the service's workload links
 * named `backend`, and a backend is down when Prometheus cannot scrape it (`up == 0`). Each query
 * that has series decides; the evidence is those queries. See README.md.
 */
export const backendDown: CauseDefinition = {
  id: ID,
  title: 'Proxy backends down',
  specificity: 70,
  // The backend's own scrape target is down too, and the proxy answers 5xx for want of a server.
  explains: ['prometheus/target-down', 'web/proxy-5xx'],
  applies: NGINX_OR_HAPROXY,
  reads: ['metrics'],
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const { describedAll, evidenceOf, listed, num, overAll, place, samplesObserved, seriesName } = ctx.lib.prometheus;
    const placed = await place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const p = placed.placement;
    const where = describedAll(p);
    const linked = backends(ctx);

    // One read after the other: the study paces a connector's reads one at a time.
    const hap = await ctx.metrics.query(overAll(p, (s) => `haproxy_server_status{${s},state="DOWN"}`));
    const ups = linked === null ? null : await ctx.metrics.query(overAll(linked, (s) => `up{${s}}`));
    const evidence: EvidenceInput[] = [];
    const down: string[] = [];
    const subjects = new Set<string>();
    const parts: string[] = [];

    if (hap.samples.length > 0) {
      const servers = hap.samples.map((s) => ({ metric: s.metric, down: num(s.value) === 1, name: `${s.metric.proxy ?? '?'}/${s.metric.server ?? '?'}` }));
      const bad = servers.filter((s) => s.down);
      const byBackend = new Map<string, { all: number; down: string[] }>();
      for (const s of servers) {
        const b = byBackend.get(s.metric.proxy ?? '?') ?? { all: 0, down: [] };
        b.all++;
        if (s.down) b.down.push(s.metric.server ?? '?');
        byBackend.set(s.metric.proxy ?? '?', b);
      }
      const empty = [...byBackend].filter(([, b]) => b.down.length === b.all).map(([name]) => name);
      evidence.push(
        evidenceOf(
          hap,
          'metric',
          samplesObserved(bad.length > 0 ? hap.samples.filter((s) => num(s.value) === 1) : hap.samples, {
            servers: servers.length,
            down: bad.length,
            backends_without_server: empty,
          }),
          bad.length > 0
            ? `HAProxy's health checks put ${bad.length} of ${servers.length} servers in state DOWN: ${listed(bad.map((s) => s.name))}${empty.length > 0 ? `; no server is left in ${listed(empty)}` : ''}.`
            : `HAProxy's health checks find every one of its ${servers.length} servers up (none in state DOWN).`,
        ),
      );
      for (const s of bad) {
        down.push(s.name);
        subjects.add(s.metric.proxy ?? s.name);
        subjects.add(s.name);
      }
      if (bad.length > 0)
        parts.push(
          `${bad.length} of ${servers.length} HAProxy servers ${bad.length === 1 ? 'is' : 'are'} DOWN by its health checks (${listed(bad.map((s) => s.name))})${empty.length > 0 ? `, leaving ${listed(empty)} with no server` : ''}`,
        );
    }
    if (ups !== null && ups.samples.length > 0) {
      const bad = ups.samples.filter((s) => num(s.value) === 0);
      evidence.push(
        evidenceOf(
          ups,
          'metric',
          samplesObserved(bad.length > 0 ? bad : ups.samples, { backends: ups.samples.length, down: bad.length }),
          bad.length > 0
            ? `${bad.length} of ${ups.samples.length} backends (the workload links named ${BACKEND_LINK}) cannot be scraped (up = 0): ${listed(bad.map((s) => seriesName(s.metric)))}.`
            : `Every one of the ${ups.samples.length} backends (the workload links named ${BACKEND_LINK}) is up (up = 1).`,
        ),
      );
      for (const s of bad) {
        down.push(seriesName(s.metric));
        subjects.add(s.metric.instance ?? seriesName(s.metric));
      }
      if (bad.length > 0)
        parts.push(
          `${bad.length} of ${ups.samples.length} backends linked as ${BACKEND_LINK} ${bad.length === 1 ? 'is' : 'are'} down (up = 0): ${listed(bad.map((s) => seriesName(s.metric)))}`,
        );
    }

    if (evidence.length === 0)
      return {
        verdict: 'unknown',
        obstacle: "the data isn't there",
        reason:
          `no haproxy_server_status series for ${where}` +
          (linked === null
            ? `, and the estate names no workload link ${BACKEND_LINK} (nginx's stub_status knows no upstreams: link its upstream servers as workload links named ${BACKEND_LINK})`
            : `, and no up series for the workload links named ${BACKEND_LINK}`),
      };
    if (down.length > 0)
      return {
        verdict: 'holds',
        reason: `${parts.join('; ')} (${where})`,
        evidence,
        subjects: [...subjects].slice(0, 50),
        verification: { cause: ID, expect: 'ruled_out', after_s: 60 },
      };
    return { verdict: 'ruled_out', reason: `every backend of the proxy of ${where} is up`, evidence };
  },
};
