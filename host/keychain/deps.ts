import type { Clock } from '../clock.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Logger } from '../log.ts';
import type { AppliedRepo } from './applied.repo.ts';
import type { BundleBuilder } from './bundle-builder.ts';
import type { BundlesRepo } from './bundles.repo.ts';
import type { KeyRing } from './keys.ts';
import type { LicenceGate } from './licence-gate.ts';
import type { MembersRepo } from './members.repo.ts';
import type { CarriedParts } from './parts.ts';
import type { PeerClient } from './peer-client.ts';
import type { SiteKeysRepo } from './site-keys.repo.ts';
import type { KeychainStateRepo } from './state.repo.ts';

/** What the keychain's services share: its repos, keys, licence gate, the parts it carries, the way to other installs. */
export interface KeychainDeps {
  state: KeychainStateRepo;
  members: MembersRepo;
  siteKeys: SiteKeysRepo;
  bundles: BundlesRepo;
  applied: AppliedRepo;
  keys: KeyRing;
  gate: LicenceGate;
  builder: BundleBuilder;
  parts: CarriedParts;
  peers: PeerClient;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  /** This install's console address: its address in the keychain unless one is given. */
  consoleAddress: () => Promise<string | null>;
}
