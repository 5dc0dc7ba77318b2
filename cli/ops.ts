import type { Services } from '../host/app.ts';
import { AppError } from '../host/errors.ts';
import type { AdminPrincipal } from '../host/identity/principal.ts';
import type { CauseCatalogue } from '../host/investigation/catalogue.ts';
import type { CheckRun, CheckRunRequest } from '../host/investigation/checks-now.ts';
import { CliProblem, EXIT_FAILED } from './base.ts';
import type { CliContext } from './context.ts';

/** The ledger actor of checks run from the command line. */
export const CLI_ACTOR = 'cli';

/** The operator at the host's console: a build started by the CLI is recorded as the admin token's. */
export const CLI_PRINCIPAL: AdminPrincipal = { kind: 'admin_token', actor: 'admin-token', role: 'owner', email: null };

/** An AppError of the services (unknown connector, ...) as a problem the operator can act on. */
export function asProblem(e: unknown): never {
  if (e instanceof AppError) throw new CliProblem(e.code, e.message, EXIT_FAILED);
  throw e;
}

/** The app, refused with `not_migrated` when `table` (of an area newer than the database's schema) does not exist yet. */
async function appWith(ctx: CliContext, table: string, what: string): Promise<Services> {
  const app = await ctx.app();
  if (!(await ctx.db.schema.hasTable(table)))
    throw new CliProblem('not_migrated', `the ${what} tables do not exist yet: start the service once after upgrading`, EXIT_FAILED);
  return app;
}

/** The estate as the host has it, with estate.json applied as the service's start applies it (`estate build`, `estate resolve`). */
export async function openEstate(ctx: CliContext): Promise<Services> {
  const app = await appWith(ctx, 'estate_state', 'estate');
  await app.estate.estate.start();
  return app;
}

/** Checks run by hand, as `POST /v1/checks/run` runs them, in the CLI's process. */
export interface CliChecks {
  readonly catalogue: CauseCatalogue;
  run(r: Omit<CheckRunRequest, 'actor'>): Promise<CheckRun>;
}

/**
 * The investigation area's `checksNow`, on the estate as the service stored it: unlike the
 * service's start (and `estate resolve`), this never applies `estate.json`, so that a run
 * without `--record` writes nothing.
 */
export async function openChecks(ctx: CliContext): Promise<CliChecks> {
  const { investigation } = await appWith(ctx, 'investigations', 'investigation');
  return { catalogue: investigation.catalogue, run: (r) => investigation.checksNow({ ...r, actor: CLI_ACTOR }) };
}
