import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { shareCheck } from '../share.ts';
import { HAPROXY } from '../tier.ts';

const ID = 'web/proxy-5xx';

/**
 * `web/proxy-5xx`: HAProxy answers 5xx that its servers did not send (no server left, a refused
 * or timed-out connection, a bad answer): per backend, the backend's 5xx less its servers' 5xx,
 * over all its responses. The app behind may be healthy; the proxy is where the errors are made.
 * nginx's stub_status counts no status codes, so this reads HAProxy only. See README.md.
 */
export const proxy5xx: CauseDefinition = {
  id: ID,
  title: '5xx made at the proxy',
  specificity: 45,
  applies: HAPROXY,
  reads: ['metrics'],
  settings: { threshold: 0.05, window: '5m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const placed = await ctx.lib.prometheus.place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const sum = (metric: string, s: string, w: string, code = '') => `sum by (instance, proxy) (rate(${metric}{${s}${code}}[${w}]))`;
    return shareCheck(ctx, placed.placement, {
      id: ID,
      metric: 'http_responses_total',
      expr: (s, w) =>
        `(${sum('haproxy_backend_http_responses_total', s, w, ',code="5xx"')} - ${sum('haproxy_server_http_responses_total', s, w, ',code="5xx"')}) / ${sum('haproxy_backend_http_responses_total', s, w)}`,
      what: "HAProxy made itself (a backend's 5xx less those its servers sent)",
      meaning: 'the proxy answers these itself (no server left, a connection refused or timed out), not the servers behind it',
    });
  },
};
