import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Install } from '../install/install.ts';
import type { VerifyOptions, VerifyReport } from '../ledger/verify.ts';
import type { PluginRegistry } from '../plugins/loader.ts';
import type { Db } from '../storage/db.ts';
import { doctorRoutes } from './doctor.routes.ts';
import { doctorDeps, runDoctor, type DoctorExtras } from './doctor.service.ts';

/** GET /v1/doctor: the same checks as `oncall doctor`, judged as the running service. */
export function createDoctorArea(d: {
  db: Db; config: Config; install: Pick<Install, 'get'>; clock: Clock; plugins: PluginRegistry; verify: (opts?: VerifyOptions) => Promise<VerifyReport>; extras: DoctorExtras;
}): Area {
  const run = () => runDoctor(doctorDeps({ db: d.db, config: d.config, installs: d.install, clock: d.clock, plugins: async () => d.plugins, verifyLedger: d.verify, extras: d.extras, judge: 'service' }));
  return { routes: ({ server, log, guard }: Http) => doctorRoutes(server, { log, guard, clock: d.clock, run }) };
}
