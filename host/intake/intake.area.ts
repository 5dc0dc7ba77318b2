import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { PluginRegistry } from '../plugins/loader.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import type { Db } from '../storage/db.ts';
import { HeartbeatService } from './heartbeats.ts';
import { HeartbeatsRepo } from './heartbeats.repo.ts';
import { heartbeatRoutes } from './heartbeats.routes.ts';
import type { HeldAlerts } from './held-alerts.ts';
import type { HeldStore } from './held-store.ts';
import { intakeRoutes } from './intake.routes.ts';
import { IntakeService } from './intake.service.ts';
import { Normalisers } from './normalise.ts';
import type { ServiceResolver } from './placement.ts';

export interface IntakeArea extends Area {
  readonly intake: IntakeService;
  /** What other areas may read or mark of the held alerts (the store's `alerts`). */
  readonly held: HeldAlerts;
  /** Which normaliser reads a source word (`grafana` → `alertmanager`, an unknown word → `generic`). */
  normaliserOf(source: string): string;
  /** The tick's share: forgets firings older than the baseline reads. */
  prune(): Promise<number>;
  /** Heartbeats of the alerting pipeline (`heartbeats`, the `heartbeats` settings document). */
  readonly heartbeats: HeartbeatService;
}

/**
 * Alert intake; owns `held_alerts` and `alert_firings` through `store` (`createHeldStore`, built
 * below the estate, which reads it). `resolver` names each alert's service: the estate's.
 */
export function createIntakeArea(d: {
  db: Db;
  settings: SettingsStore;
  store: HeldStore;
  plugins: PluginRegistry;
  ledger: Ledger;
  clock: Clock;
  resolver?: ServiceResolver;
}): IntakeArea {
  const { held, firings } = d.store;
  const heartbeats = new HeartbeatService({ repo: new HeartbeatsRepo(d.db), settings: d.settings, ledger: d.ledger, clock: d.clock });
  const normalisers = new Normalisers(d.plugins.loaded);
  const intake = new IntakeService({ normalisers, held, firings, ledger: d.ledger, clock: d.clock, resolver: d.resolver, heartbeats });
  return {
    intake,
    normaliserOf: (source) => normalisers.nameOf(source),
    held: d.store.alerts,
    heartbeats,
    prune: () => firings.prune(d.clock.now().getTime()),
    routes: ({ server, log, guard }: Http) => {
      intakeRoutes(server, { log, guard, intake });
      heartbeatRoutes(server, { log, guard, heartbeats });
    },
  };
}
