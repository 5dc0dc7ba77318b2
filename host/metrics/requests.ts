import { Counter, Histogram, type Registry } from 'prom-client';
import type { Request, Response } from 'restify';

/**
 * Requests by route template (`/v1/episodes/:id`, never the path asked for: a closed set),
 * method and status, with a latency histogram; requests that matched no route are `unmatched`.
 * Registered on the server's `after` event, after the answer went out.
 */
export function requestMetrics(registry: Registry): (req: Request, res: Response) => void {
  const requests = new Counter({
    name: 'oncall_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status code.',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'oncall_http_request_duration_seconds',
    help: 'Time from receiving a request to finishing its answer, by method and route template.',
    labelNames: ['method', 'route'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return (req, res) => {
    const spec = (req.getRoute() as { path?: unknown } | null | undefined)?.path;
    const route = typeof spec === 'string' ? spec : 'unmatched';
    const method = req.method !== undefined && /^(GET|POST|PUT|DELETE|PATCH|OPTIONS)$/.test(req.method) ? req.method : 'other';
    requests.inc({ method, route, status: String(res.statusCode) });
    latency.observe({ method, route }, Math.max(0, Date.now() - req.time()) / 1000);
  };
}
