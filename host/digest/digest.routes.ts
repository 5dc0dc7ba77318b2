import type { Server } from 'restify';
import type { Guard } from '../http/guard.ts';
import { queryOf } from '../http/query.ts';
import { route } from '../http/respond.ts';
import type { Logger } from '../log.ts';
import { parseDays } from './days.ts';
import type { DigestService } from './digest.service.ts';

export function digestRoutes(server: Server, deps: { log: Logger; guard: Guard; digest: Pick<DigestService, 'build'> }): void {
  const { log, guard, digest } = deps;
  server.get(
    '/v1/digest',
    route(
      log,
      async (req) => {
        await guard.bearer(req);
        await guard.operating();
        const days = parseDays(queryOf(req).get('days'));
        return [200, await digest.build(days)];
      },
      { query: ['days'] },
    ),
  );
}
