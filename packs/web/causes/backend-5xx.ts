import type { CauseDefinition, CheckAnswer, CheckContext } from '../../../host/plugins/contract.ts';
import { shareCheck } from '../share.ts';
import { HAPROXY } from '../tier.ts';

const ID = 'web/backend-5xx';

/**
 * `web/backend-5xx`: the servers behind HAProxy answer 5xx and the proxy passes them on: per
 * backend, its servers' 5xx over all their responses (HAProxy counts each server's answers by
 * class). The proxy is healthy; the app behind it fails. See README.md.
 */
export const backend5xx: CauseDefinition = {
  id: ID,
  title: '5xx from the servers behind the proxy',
  specificity: 35,
  applies: HAPROXY,
  reads: ['metrics'],
  settings: { threshold: 0.05, window: '5m' },
  async check(ctx: CheckContext): Promise<CheckAnswer> {
    const placed = await ctx.lib.prometheus.place(ctx);
    if (!placed.ok) return { verdict: 'unknown', obstacle: placed.obstacle, reason: placed.reason };
    const sum = (s: string, w: string, code = '') => `sum by (instance, proxy) (rate(haproxy_server_http_responses_total{${s}${code}}[${w}]))`;
    return shareCheck(ctx, placed.placement, {
      id: ID,
      metric: 'http_responses_total',
      expr: (s, w) => `${sum(s, w, ',code="5xx"')} / ${sum(s, w)}`,
      what: 'answered by the servers behind HAProxy',
      meaning: 'the servers behind the proxy fail and the proxy passes their errors on',
    });
  },
};
