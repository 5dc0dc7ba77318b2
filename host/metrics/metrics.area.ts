import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import { buildRegistry } from './registry.ts';
import { requestMetrics } from './requests.ts';
import type { MetricSources } from './sources.ts';
import { metricsRoutes } from './metrics.routes.ts';

export type { MetricSources } from './sources.ts';

/**
 * GET /metrics (docs/operations.md): built only when SERVICE_METRICS_TOKEN is set, so an install
 * that does not scrape pays nothing (no registry, no listeners). Reads each area's figures
 * through `sources` at scrape time; counts requests on the server's `after` event.
 */
export function createMetricsArea(d: { token: string | null; sources: MetricSources; clock: Clock }): Area {
  const registry = d.token === null ? null : buildRegistry(d.sources, d.clock);
  return {
    routes: ({ server, log, guard }: Http) => {
      if (registry !== null) server.on('after', requestMetrics(registry));
      metricsRoutes(server, { log, guard, registry, token: d.token });
    },
  };
}
