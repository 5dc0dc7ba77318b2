import type { Server } from 'restify';
import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { Guard } from '../http/guard.ts';
import { queryOf } from '../http/query.ts';
import { route } from '../http/respond.ts';
import type { Logger } from '../log.ts';
import { DoctorReports } from './doctor-reports.ts';
import type { DoctorReport } from './doctor.service.ts';

/** GET /v1/doctor: the health report, reused for up to 60 s unless `fresh=1`. */
export function doctorRoutes(server: Server, deps: { log: Logger; guard: Guard; clock: Clock; run: () => Promise<DoctorReport> }): void {
  const reports = new DoctorReports({ run: deps.run, clock: deps.clock });

  server.get(
    '/v1/doctor',
    route(
      deps.log,
      async (req) => {
        await deps.guard.bearer(req);
        const fresh = queryOf(req).get('fresh') ?? '0';
        if (fresh !== '0' && fresh !== '1') throw new AppError('invalid_parameter', 'fresh must be 1 (run now) or 0');
        return [200, await reports.get(fresh === '1')];
      },
      { query: ['fresh'] },
    ),
  );
}
