import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { SettingsStore } from '../settings/settings.model.ts';
import { policyRoutes } from './policy.routes.ts';
import { PolicyService } from './policy.service.ts';

export interface PolicyArea extends Area {
  readonly policy: PolicyService;
}

/** The policy document (the `policy` settings document, or policy.json). */
export async function createPolicyArea(d: {
  settings: SettingsStore;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  configDir: string | null;
  /** false (the CLI's build): policy.json is not brought into force. */
  start?: boolean;
}): Promise<PolicyArea> {
  const policy = new PolicyService({ settings: d.settings, ledger: d.ledger, clock: d.clock, log: d.log, configDir: d.configDir });
  if (d.start !== false) await policy.start();
  return { policy, routes: ({ server, log, guard }: Http) => policyRoutes(server, { log, guard, policy }) };
}
