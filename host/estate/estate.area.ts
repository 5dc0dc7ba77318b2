import type { Area, Http } from '../area.ts';
import type { CauseSettingsLookup } from './check-settings.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Licence } from '../licence/licence.ts';
import { serviceLimit } from '../licence/licence-limits.ts';
import type { Logger } from '../log.ts';
import { Revisions } from '../settings/revisions.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { Db, Trx } from '../storage/db.ts';
import { CarriedEstate } from './estate.carried.ts';
import { EstateBuilder, type Deploys, type Discovery, type EpisodeOpenings } from './estate.build.ts';
import { readEstateFile } from './estate.file.ts';
import { EstateRepo } from './estate.repo.ts';
import { estateRoutes } from './estate.routes.ts';
import { EstateService, type GuardedChanges, type UnplacedAlerts } from './estate.service.ts';

/** What the estate asks of the other areas: each a narrow slice of their public services. */
export interface EstateAreaDeps {
  db: Db;
  /** The settings documents store (the overrides' revision is kept there). */
  settings: SettingsStore;
  log: Logger;
  ledger: Ledger;
  clock: Clock;
  config: Pick<Config, 'configDir' | 'debounceS'>;
  /** The people of the install (approvers must be one). */
  people: { get(email: string, trx?: Trx): Promise<object | null> };
  /** The licence in force (its tier limits added services). */
  licences: { inForce(trx?: Trx): Promise<Pick<Licence, 'tier' | 'services'> | null> };
  /** The connectors: which are healthy, and the fallback coverage for services without linked connectors. */
  connectors: { covers(service: string): Promise<boolean>; list(): Promise<{ connectors: Array<{ name: string; state: string }> }> };
  /** The held alerts (the intake area): unplaced ones, and the services alerts named. */
  held: UnplacedAlerts;
  discovery: Discovery;
  episodes: EpisodeOpenings;
  /** The loaded causes' declared settings: services' `check_settings` are checked against them. */
  causeSettings?: CauseSettingsLookup;
  /** Governance's approvals, for changes that wait for two (a tier lowered, approvers of a tier-1/2 service changed). */
  changes?: GuardedChanges;
  /** false (the CLI's build): estate.json is not applied; `estate.start()` does it when a command wants it. */
  start?: boolean;
}

export interface EstateArea extends Area {
  /** The estate; also the intake's ServiceResolver. */
  estate: EstateService;
  builder: EstateBuilder;
  /** The overrides and the packs' settings as the keychain carries them (estate.carried.ts). */
  carried: CarriedEstate;
  /** Readiness facts for governance: a service's owner. */
  facts: { ownerOf(service: string): Promise<string | null> };
  /**
   * Whether a connector can read the service's signals: for a service whose links name
   * connectors, one of those is healthy; otherwise any healthy connector (the connectors' rule).
   */
  covers(service: string): Promise<boolean>;
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
    repo,
    ...(deps.changes === undefined ? {} : { changes: deps.changes }),
    revisions: new Revisions(deps.settings),
    ledger: deps.ledger,
    clock: deps.clock,
    log,
    people: { isPerson: async (email, trx) => (await deps.people.get(email, trx)) !== null },
    licence: {
      limit: async (trx) => {
        const l = await deps.licences.inForce(trx);
        return { tier: l?.tier ?? null, services: serviceLimit(l) };
      },
    },
    file: readEstateFile(deps.config.configDir),
    unplaced: deps.held,
    ...(deps.causeSettings === undefined ? {} : { causeSettings: deps.causeSettings }),
  });
  if (deps.start !== false) await estate.start();
  const builder = new EstateBuilder({
    repo,
    estate,
    alerts: deps.held,
    discovery: deps.discovery,
    episodes: deps.episodes,
    deploys: deploysFrom(deps.ledger),
    ledger: deps.ledger,
    clock: deps.clock,
    log,
    debounceS: deps.config.debounceS,
  });
  return {
    routes: ({ server, log: httpLog, guard }: Http) => estateRoutes(server, { log: httpLog, guard, estate, builder }),
    estate,
    builder,
    carried: new CarriedEstate(estate),
    facts: { ownerOf: async (service) => (await estate.find(service))?.owner ?? null },
    covers: async (service) => {
      const linked = new Set(((await estate.find(service))?.links ?? []).map((l) => l.connector).filter((c): c is string => c !== undefined));
      if (linked.size === 0) return deps.connectors.covers(service);
      return (await deps.connectors.list()).connectors.some((c) => c.state === 'ok' && linked.has(c.name));
    },
  };
}
