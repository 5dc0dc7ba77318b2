import { systemClock } from '../host/clock.ts';
import type { EpisodeNotifier } from '../host/episodes/episode.service.ts';
import type { InvestigatedEpisodes } from '../host/episodes/episodes.area.ts';
import { EstateRepo } from '../host/estate/estate.repo.ts';
import { EstateService } from '../host/estate/estate.service.ts';
import { PeopleRepo } from '../host/identity/people.repo.ts';
import { HeldRepo } from '../host/intake/held.repo.ts';
import type { CauseCatalogue } from '../host/investigation/catalogue.ts';
import type { CheckRun, CheckRunRequest } from '../host/investigation/checks-now.ts';
import { createFindings, createInvestigationArea } from '../host/investigation/investigation.area.ts';
import { LedgerRepo } from '../host/ledger/ledger.repo.ts';
import { Ledger } from '../host/ledger/ledger.service.ts';
import { silentLogger } from '../host/log.ts';
import { loadPlugins, pluginDirs } from '../host/plugins/loader.ts';
import { Revisions } from '../host/settings/revisions.ts';
import { SettingsRepo } from '../host/settings/settings.repo.ts';
import { UnitOfWork } from '../host/storage/unit-of-work.ts';
import { PLUGIN_API_VERSION } from '../host/version.ts';
import { CliProblem, EXIT_FAILED } from './base.ts';
import type { CliContext } from './context.ts';
import { openOps } from './ops.ts';

/** The ledger actor of checks run from the command line. */
export const CLI_ACTOR = 'cli';

/** Checks run by hand, as `POST /v1/checks/run` runs them, in the CLI's process. */
export interface CliChecks {
  readonly catalogue: CauseCatalogue;
  run(r: Omit<CheckRunRequest, 'actor'>): Promise<CheckRun>;
}

const notHere = (what: string) => () => Promise.reject(new Error(`the CLI ${what}`));

/**
 * The investigation area as the host builds it (the same `checksNow` and `checkAll`), on the
 * service's database, plugins and connectors. It only runs checks by hand: the episodes,
 * autonomy levels and notifications it is also given are never reached from `checksNow`, so
 * they refuse. The estate is read as the service stored it: unlike the host (and `estate
 * resolve`), this never applies `estate.json`, so that a run without `--record` writes nothing.
 */
export async function openChecks(ctx: CliContext): Promise<CliChecks> {
  await ctx.identity();
  if (!(await ctx.db.schema.hasTable('investigations')))
    throw new CliProblem('not_migrated', 'the investigation tables do not exist yet: start the service once after upgrading', EXIT_FAILED);
  const log = silentLogger();
  const ledger = new Ledger({ repo: new LedgerRepo(ctx.db), clock: systemClock, work: new UnitOfWork(ctx.db) });
  const plugins = await loadPlugins({ dirs: pluginDirs(ctx.config), log, hostApi: PLUGIN_API_VERSION });
  const { connectors } = await openOps(ctx, plugins);
  const estate = new EstateService({
    repo: new EstateRepo(ctx.db),
    revisions: new Revisions(new SettingsRepo(ctx.db)),
    ledger,
    clock: systemClock,
    log,
    people: { isPerson: async (email, trx) => (await new PeopleRepo(ctx.db).get(email, trx)) !== null },
    licence: { limit: notHere('adds no services') },
    file: { path: null, doc: null, problem: null },
    unplaced: new HeldRepo(ctx.db),
  });
  const episodes: InvestigatedEpisodes = {
    get: notHere('investigates no episode'),
    signalsOf: notHere('investigates no episode'),
    related: notHere('investigates no episode'),
    onInvestigationsAsked: () => undefined,
  };
  const notifier: EpisodeNotifier = { tell: notHere('tells nobody'), nudge: () => undefined };
  const area = createInvestigationArea({
    findings: createFindings(ctx.db),
    plugins,
    episodes,
    estate,
    levels: { levelOf: notHere('investigates no episode') },
    connectors,
    notifier,
    ledger,
    clock: systemClock,
    log,
  });
  return { catalogue: area.catalogue, run: (r) => area.checksNow({ ...r, actor: CLI_ACTOR }) };
}
