import type { CheckContext, Placement } from '../../host/plugins/contract.ts';

/** The link name that marks a workload link as the proxy's backends (its upstream servers). */
export const BACKEND_LINK = 'backend';

/** The technologies and alert names of the web tier's proxies (awesome-prometheus-alerts names them `Nginx…` and `Haproxy…`). */
export const NGINX_OR_HAPROXY = {
  technologies: ['nginx', 'haproxy'],
  alerts: ['Nginx*', 'NGINX*', 'Haproxy*', 'HAProxy*', 'HaProxy*'],
};
export const HAPROXY = { technologies: ['haproxy'], alerts: ['Haproxy*', 'HAProxy*', 'HaProxy*'] };

/**
 * The service's workload links named `backend`, as a placement of their own: the servers behind
 * the proxy, whose `up` nginx's stub_status cannot tell (it knows no upstreams). Null when the
 * estate names none. Links that cannot be a PromQL selector are left out, as `place` does.
 */
export function backends(ctx: CheckContext): Placement | null {
  const selectors: string[] = [];
  for (const l of ctx.service.links) {
    if (l.kind !== 'workload' || l.name !== BACKEND_LINK || l.match === undefined) continue;
    const m = ctx.lib.prometheus.promMatchers(l.match);
    if (m.ok && !selectors.includes(m.selector)) selectors.push(m.selector);
  }
  return selectors.length === 0 ? null : { selectors: selectors.slice(0, 5), how: 'workload', skipped: [] };
}

/** `proxy` of an HAProxy series on its instance: `be_app on 10.0.0.5:8405`, or the backend alone when there is one instance. */
export function proxyName(metric: Record<string, string>, instances: number): string {
  const proxy = metric.proxy ?? '(no proxy label)';
  return instances > 1 && metric.instance !== undefined ? `${proxy} on ${metric.instance}` : proxy;
}
