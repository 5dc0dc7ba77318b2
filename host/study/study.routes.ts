import type { Server } from 'restify';
import { AppError } from '../errors.ts';
import { readBodyOrEmpty } from '../http/body.ts';
import type { Guard } from '../http/guard.ts';
import { optionalInt, pageLimit, queryOf } from '../http/query.ts';
import { route } from '../http/respond.ts';
import { bodyValidator } from '../http/validate.ts';
import type { Logger } from '../log.ts';
import { DEFAULT_MINUTES, MAX_MINUTES, MIN_MINUTES, type StudyService } from './study.service.ts';

const startBody = bodyValidator<{ minutes?: unknown }>({
  type: 'object',
  additionalProperties: false,
  properties: { minutes: {} },
});

/** The study's time limit from the body: a whole number of minutes within the spec's limits, 15 when absent. */
function minutesOf(body: { minutes?: unknown }): number {
  const m = body.minutes;
  if (m === undefined) return DEFAULT_MINUTES;
  if (typeof m !== 'number' || !Number.isInteger(m) || m < MIN_MINUTES || m > MAX_MINUTES)
    throw new AppError(
      'invalid_body',
      `minutes must be a whole number from ${MIN_MINUTES} to ${MAX_MINUTES} (the study's time limit; ${DEFAULT_MINUTES} when absent)`,
    );
  return m;
}

const MAX_PAGE = 500;

/**
 * The study: owners and admins start (`POST /v1/study`, 202; 409 `study_running` while one runs)
 * and stop it (`POST /v1/study/stop`); everyone signed in reads it (`GET /v1/study`) and its
 * verdicts (`GET /v1/study/verdicts`, paged by limit and offset). All answer 503 until operating.
 */
export function studyRoutes(server: Server, deps: { log: Logger; guard: Guard; study: StudyService }): void {
  const { log, guard, study } = deps;

  server.post(
    '/v1/study',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      const minutes = minutesOf(startBody(await readBodyOrEmpty(req)));
      return [202, await study.start(who, minutes)];
    }),
  );

  server.get(
    '/v1/study',
    route(log, async (req) => {
      await guard.withRole(req, 'viewer');
      await guard.operating();
      return [200, await study.view()];
    }),
  );

  server.post(
    '/v1/study/stop',
    route(log, async (req) => {
      const who = await guard.withRole(req, 'admin');
      await guard.operating();
      await readBodyOrEmpty(req);
      return [200, await study.stop(who)];
    }),
  );

  server.get(
    '/v1/study/verdicts',
    route(
      log,
      async (req) => {
        await guard.withRole(req, 'viewer');
        await guard.operating();
        const q = queryOf(req);
        return [200, await study.verdicts(pageLimit(q, 100, MAX_PAGE), optionalInt(q, 'offset') ?? 0)];
      },
      { query: ['limit', 'offset'] },
    ),
  );
}
