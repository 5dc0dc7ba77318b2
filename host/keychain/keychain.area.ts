import type { Area, Http } from '../area.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { ClientAddress } from '../http/client-address.ts';
import type { RateLimits } from '../identity/rate-limits.ts';
import type { InstallIdentity } from '../install/identity.ts';
import type { Ledger } from '../ledger/ledger.service.ts';
import type { Licence } from '../licence/licence.ts';
import type { Logger } from '../log.ts';
import type { SecretCipher } from '../secrets/cipher.ts';
import type { Db } from '../storage/db.ts';
import { AppliedRepo } from './applied.repo.ts';
import { BundleBuilder } from './bundle-builder.ts';
import { BundlesRepo } from './bundles.repo.ts';
import { keychainRoutes, peerRoutes } from './keychain.routes.ts';
import { KeychainService } from './keychain.service.ts';
import { KeyRing } from './keys.ts';
import { LicenceGate } from './licence-gate.ts';
import { MembersRepo } from './members.repo.ts';
import type { CarriedParts } from './parts.ts';
import { PeerClient } from './peer-client.ts';
import { SiteKeysRepo } from './site-keys.repo.ts';
import { KeychainStateRepo } from './state.repo.ts';

export interface KeychainArea extends Area {
  readonly keychain: KeychainService;
}

/**
 * The keychain: installs that share settings (docs/keychain.md). Owns `keychain_state`,
 * `keychain_members`, `keychain_site_keys`, `keychain_bundles` and `keychain_parts`; reads and
 * writes the settings it carries only through each owning area's `CarriedPart`.
 */
export function createKeychainArea(d: {
  db: Db;
  cipher: SecretCipher;
  identity: InstallIdentity;
  licences: { inForce(): Promise<Pick<Licence, 'tier' | 'installs'> | null> };
  parts: CarriedParts;
  limits: RateLimits;
  consoleAddress: () => Promise<string | null>;
  ledger: Ledger;
  clock: Clock;
  log: Logger;
  config: Pick<Config, 'trustedProxies'>;
  peers?: PeerClient;
}): KeychainArea {
  const log = d.log.child({ component: 'keychain' });
  const state = new KeychainStateRepo(d.db);
  const members = new MembersRepo(d.db);
  const bundles = new BundlesRepo(d.db);
  const keys = new KeyRing({ cipher: d.cipher, identity: d.identity });
  const builder = new BundleBuilder({ state, members, bundles, parts: d.parts, keys, ledger: d.ledger, clock: d.clock });
  const keychain = new KeychainService({
    state,
    members,
    siteKeys: new SiteKeysRepo(d.db),
    bundles,
    applied: new AppliedRepo(d.db),
    keys,
    gate: new LicenceGate(d.licences),
    builder,
    parts: d.parts,
    peers: d.peers ?? new PeerClient(),
    ledger: d.ledger,
    clock: d.clock,
    log,
    consoleAddress: d.consoleAddress,
  });
  return {
    keychain,
    routes: ({ server, log: httpLog, guard }: Http) => {
      keychainRoutes(server, { log: httpLog, guard, keychain });
      peerRoutes(server, { log: httpLog, guard, keychain, limits: d.limits, client: new ClientAddress(d.config.trustedProxies) });
    },
  };
}
