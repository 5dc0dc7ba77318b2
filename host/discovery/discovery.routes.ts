import type { Server } from 'restify';
import type { Guard } from '../http/guard.ts';
import { route } from '../http/respond.ts';
import type { Logger } from '../log.ts';
import type { DiscoveryService } from './discovery.service.ts';

/**
 * Discovery: `POST /v1/discover` (admin) starts a job and answers 202 `{job}` at once;
 * `GET /v1/jobs/{id}` (viewer) shows its progress per connection and what it found. Both answer
 * 503 until the install is operating.
 */
export function discoveryRoutes(server: Server, deps: { log: Logger; guard: Guard; discovery: DiscoveryService }): void {
  const { log, guard, discovery } = deps;

  server.post(
    '/v1/discover',
    route(log, async (req, res) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      const job = await discovery.start(who);
      res.header('location', `/v1/jobs/${job.id}`);
      return [202, { job }];
    }),
  );

  server.get(
    '/v1/jobs/:id',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      await guard.operating();
      return [200, { job: await discovery.job(String(req.params?.id ?? '')) }];
    }),
  );
}
