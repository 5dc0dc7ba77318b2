import type { Server } from 'restify';
import type { Clock } from '../clock.ts';
import type { Guard } from '../http/guard.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import { Revisions } from '../settings/revisions.ts';
import { SettingsRepo } from '../settings/settings.repo.ts';
import type { Db } from '../storage/db.ts';
import { EstateBuilder, type Deploys, type Discovery, type EpisodeOpenings } from './estate.build.ts';
import { readEstateFile } from './estate.file.ts';
import { EstateRepo } from './estate.repo.ts';
import { estateRoutes } from './estate.routes.ts';
import { EstateService, type LicenceTier, type PersonDirectory, type UnplacedAlerts } from './estate.service.ts';

export interface EstateAreaDeps {
  db: Db;
  /** Null in the CLI: no routes. */
  server: Server | null;
  log: Logger;
  guard: Guard | null;
  ledger: Ledger;
  clock: Clock;
  configDir: string | null;
  debounceS: number;
  people: PersonDirectory;
  licence: LicenceTier;
  unplaced: UnplacedAlerts;
  discovery: Discovery;
  episodes: EpisodeOpenings;
}

export interface EstateArea {
  /** The estate; also the intake's ServiceResolver. */
  estate: EstateService;
  builder: EstateBuilder;
  /** Readiness facts for governance: a service's owner and whether a connector covers one of its links. */
  facts: { ownerOf(service: string): Promise<string | null>; linkConnectors(service: string): Promise<string[] | null> };
}

/** `human.deploy` events of the ledger, newest first, with the service they name. */
function deploysFrom(ledger: Ledger): Deploys {
  return {
    recent: async () => {
      const { events } = await ledger.find({ type: 'human.deploy', limit: 2000, order: 'desc' });
      const out: Array<{ service: string; repository: string | null; at: string }> = [];
      for (const e of events) {
        const d = (e.data ?? {}) as Record<string, unknown>;
        if (typeof d.service === 'string' && /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/.test(d.service)) {
          out.push({ service: d.service, repository: typeof d.repository === 'string' ? d.repository.slice(0, 500) : null, at: e.at });
        }
      }
      return out;
    },
  };
}

/** The estate area, built and wired: its tables, its service and resolver, its build, its routes. */
export async function createEstateArea(deps: EstateAreaDeps): Promise<EstateArea> {
  const repo = new EstateRepo(deps.db);
  const log = deps.log.child({ component: 'estate' });
  const estate = new EstateService({
    repo, revisions: new Revisions(new SettingsRepo(deps.db)), ledger: deps.ledger, clock: deps.clock, log,
    people: deps.people, licence: deps.licence, file: readEstateFile(deps.configDir), unplaced: deps.unplaced,
  });
  await estate.start();
  const builder = new EstateBuilder({ repo, estate, alerts: deps.unplaced, discovery: deps.discovery, episodes: deps.episodes, deploys: deploysFrom(deps.ledger), ledger: deps.ledger, clock: deps.clock, log, debounceS: deps.debounceS });
  if (deps.server !== null && deps.guard !== null) estateRoutes(deps.server, { log: deps.log, guard: deps.guard, estate, builder });
  return {
    estate,
    builder,
    facts: {
      ownerOf: async (service) => (await estate.find(service))?.owner ?? null,
      linkConnectors: async (service) => {
        const s = await estate.find(service);
        return s === null ? null : [...new Set(s.links.map((l) => l.connector).filter((c): c is string => c !== undefined))];
      },
    },
  };
}
