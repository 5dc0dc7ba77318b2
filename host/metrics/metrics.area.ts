import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { MetricSources } from './sources.ts';
import { metricsRoutes } from './metrics.routes.ts';

export type { MetricSources } from './sources.ts';

/**
 * GET /metrics (docs/operations.md): built only when SERVICE_METRICS_TOKEN is set, so an install
 * that does not scrape pays nothing (prom-client is not even loaded: 11 MB less resident memory after start; no registry, no
 * listeners). Reads each area's figures through `sources` at scrape time; counts requests on the
 * server's `after` event.
 */
export async function createMetricsArea(d: { token: string | null; sources: MetricSources; clock: Clock }): Promise<Area> {
  if (d.token === null) return { routes: ({ server, log, guard }: Http) => metricsRoutes(server, { log, guard, registry: null, token: null }) };
  const [{ buildRegistry }, { requestMetrics }] = await Promise.all([import('./registry.ts'), import('./requests.ts')]);
  const registry = buildRegistry(d.sources, d.clock);
  return {
    routes: ({ server, log, guard }: Http) => {
      server.on('after', requestMetrics(registry));
      metricsRoutes(server, { log, guard, registry, token: d.token });
    },
  };
}
