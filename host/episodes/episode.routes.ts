import type { Server } from 'restify';
import { AppError } from '../errors.ts';
import type { Guard } from '../http/guard.ts';
import { optionalText, pageLimit, queryOf } from '../http/query.ts';
import { route } from '../http/respond.ts';
import type { Logger } from '../log.ts';
import { DEFAULT_EPISODE_PAGE, MAX_EPISODE_PAGE, type EpisodeReader } from './episode.reader.ts';

export function episodeRoutes(server: Server, deps: { log: Logger; guard: Guard; reader: EpisodeReader }): void {
  const { log, guard, reader } = deps;

  server.get(
    '/v1/episodes',
    route(
      log,
      async (req) => {
        await guard.bearer(req);
        await guard.operating();
        const q = queryOf(req);
        const group = q.get('group') || null;
        if (group !== null && group !== 'incident') throw new AppError('invalid_parameter', 'group must be incident');
        return [
          200,
          await reader.list({
            limit: pageLimit(q, DEFAULT_EPISODE_PAGE, MAX_EPISODE_PAGE),
            group,
            query: optionalText(q, 'query', 1000) ?? null,
            cursor: optionalText(q, 'cursor', 200) ?? null,
          }),
        ];
      },
      { query: ['limit', 'group', 'query', 'cursor'] },
    ),
  );

  server.get(
    '/v1/episodes/:id',
    route(log, async (req) => {
      await guard.bearer(req);
      await guard.operating();
      const id = String(req.params.id ?? '');
      if (id.length === 0 || id.length > 40) throw new AppError('not_found', 'no such episode');
      return [200, await reader.get(id)];
    }),
  );
}
