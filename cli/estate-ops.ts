import { systemClock } from '../host/clock.ts';
import { DiscoveryService } from '../host/discovery/discovery.service.ts';
import { JobsRepo } from '../host/discovery/jobs.repo.ts';
import { EpisodeRepo } from '../host/episodes/episode.repo.ts';
import { createEstateArea, type EstateArea } from '../host/estate/estate.area.ts';
import type { AdminPrincipal } from '../host/identity/principal.ts';
import { PeopleRepo } from '../host/identity/people.repo.ts';
import { HeldRepo } from '../host/intake/held.repo.ts';
import { Normalisers } from '../host/intake/normalise.ts';
import { LedgerRepo } from '../host/ledger/ledger.repo.ts';
import { Ledger } from '../host/ledger/ledger.service.ts';
import { silentLogger } from '../host/log.ts';
import { SettingsRepo } from '../host/settings/settings.repo.ts';
import { UnitOfWork } from '../host/storage/unit-of-work.ts';
import { loadPlugins, pluginDirs } from '../host/plugins/loader.ts';
import { PLUGIN_API_VERSION } from '../host/version.ts';
import { CliProblem, EXIT_FAILED } from './base.ts';
import type { CliContext } from './context.ts';
import { openOps } from './ops.ts';

/** The operator at the host's console: a build started by the CLI is recorded as the admin token's. */
export const CLI_PRINCIPAL: AdminPrincipal = { kind: 'admin_token', actor: 'admin-token', role: 'owner', email: null };

/**
 * The estate area as the host builds it, in the CLI's process on the service's database (no
 * routes). The CLI never adds services, so no licence is consulted.
 */
export async function openEstate(ctx: CliContext): Promise<{ area: EstateArea; normalisers: Normalisers }> {
  await ctx.identity();
  if (!(await ctx.db.schema.hasTable('estate_state')))
    throw new CliProblem('not_migrated', 'the estate tables do not exist yet: start the service once after upgrading', EXIT_FAILED);
  const log = silentLogger();
  const work = new UnitOfWork(ctx.db);
  const ledger = new Ledger({ repo: new LedgerRepo(ctx.db), clock: systemClock, work });
  const { connectors } = await openOps(ctx);
  const plugins = await loadPlugins({ dirs: pluginDirs(ctx.config), log, hostApi: PLUGIN_API_VERSION });
  const area = await createEstateArea({
    db: ctx.db,
    settings: new SettingsRepo(ctx.db),
    log,
    ledger,
    clock: systemClock,
    config: ctx.config,
    connectors,
    discovery: new DiscoveryService({ repo: new JobsRepo(ctx.db), work, connectors, ledger, clock: systemClock, log, timeoutS: ctx.config.discoverTimeoutS }),
    episodes: new EpisodeRepo(ctx.db),
    held: new HeldRepo(ctx.db),
    people: new PeopleRepo(ctx.db),
    licences: { inForce: () => Promise.reject(new Error('the CLI adds no services')) },
  });
  return { area, normalisers: new Normalisers(plugins.loaded) };
}
